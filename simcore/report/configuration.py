"""docs/configuration.md: every key a configuration may hold, from the schema and registries.

The keys, what each takes, its default and its meaning come from the config schema as
`simcore.sweep.config.schema` completes it (`workflow/schemas/config.schema.yaml`, its
`default` annotations filled in from the code); the tables of machine kinds, allocators and
their options, schedulers and their parameters, workload models and workload transforms
come from the registries. Nothing names a key by hand: a key added to the schema appears
on the page when it is regenerated (`simcore list config --markdown`), and a test keeps
the committed page current.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from simcore.base.params import INT64_MAX, Parameter
from simcore.base.patterns import NAME
from simcore.fidelity.runs import MOVED
from simcore.machines.contract import CAPABILITIES
from simcore.machines.registry import ALLOCATORS, FAILURE_OPTIONS, KINDS, all_options
from simcore.policy import SCHEDULERS, all_parameters
from simcore.workload.spec import ALIASES, FIXED, GRID, transforms
from simcore.workload.synthetic import MODELS

#: The page's opening example: a complete configuration, small enough to read at once (a
#: test validates and plans it). Its keys' order is the order of the page's sections.
EXAMPLE = """\
dataset: first-sweep            # results go to results/first-sweep/

workloads:                      # job sources: a synthetic model here, or a trace
  lublin:
    synthetic: {model: lublin, jobs: 1000, max_procs: 128}

machines:                       # kind:size, in allocation units
  torus: "torus:4x4x8"
  flat: "flat:128"

policies:                       # a scheduler and its parameters
  fcfs: {scheduler: fcfs}
  bm: {scheduler: bm, fn_tor: 0.1}

experiments:                    # what to cross with what
  first:
    workloads: [lublin]
    machines: [torus, flat]
    policies: [fcfs, bm]        # bm migrates jobs, so it runs on the torus only
    transforms: {first_jobs: 500}
    grid: {offered_load: [0.6, 0.9]}
    seeds: [1, 2]

traces:                         # where traces come from (required even if none is used)
  catalogue: config/traces.yaml

sweep:
  dask: {backend: local}
"""


def config_markdown(schema_path: str | os.PathLike[str] | None = None) -> str:
    """docs/configuration.md, from the schema at `schema_path` (default the workflow's) and
    the registries (regenerate with `simcore list config --markdown`)."""
    from simcore.sweep.config import schema
    from simcore.sweep.planning import SCHEMA

    root = schema(schema_path or SCHEMA)
    top = root["properties"]
    example = yaml.safe_load(EXAMPLE)
    order = [k for k in example if k in top] + [k for k in top if k not in example]
    required = set(root.get("required", []))
    lines = [
        "# Configuration",
        "",
        "Every key a configuration may hold: what it takes, its default and an example.",
        "A configuration is a YAML file: `config/config.yaml` by default, or the file given",
        "with `--configfile` (a complete configuration, which replaces the default). This page",
        "is generated from the schema `workflow/schemas/config.schema.yaml` and the",
        "registries of the code (`simcore list config --markdown`); a test keeps it current.",
        "`simcore plan --configfile FILE` checks a configuration and says what it would run;",
        "an error names the key that is wrong, and a key given twice in a file is an error.",
        "",
        "## A complete example",
        "",
        "```yaml",
        *EXAMPLE.rstrip("\n").splitlines(),
        "```",
        "",
        "The sections below follow the example's keys, then the optional keys it leaves out.",
        "Names (of workloads, machines, policies, experiments and the dataset) hold "
        "letters,",
        "digits, `_`, `.` and `-`, starting with a letter or digit: they become directory "
        "names.",
        "",
        "| key | required | takes | meaning |",
        "|---|---|---|---|",
    ]
    lines += [f"| [`{key}`](#{key}) | {'yes' if key in required else 'no'} | "
              f"{_takes(top[key], root)} | {_meaning(top[key], root)} |" for key in order]
    sections = {"workloads": _workloads, "machines": _machines, "policies": _policies,
                "experiments": _experiments}
    for key in order:
        node = _resolved(top[key], root)
        lines += ["", f"## `{key}`", ""]
        lines += _summary(key, node, root, key in required, example.get(key))
        lines += sections.get(key, _generic)(key, node, root, example)
    return "\n".join(lines) + "\n"


# --- sections ---------------------------------------------------------------------------

def _generic(key: str, node: dict, root: dict, example: dict) -> list[str]:
    rows = list(_key_rows(node, root, ""))
    if not rows:
        return []
    return ["", "| key | takes | default | meaning |", "|---|---|---|---|",
            *(f"| `{key}.{name}` | {takes} | {default} | {meaning} |"
              for name, takes, default, meaning in rows)]


def _workloads(key: str, node: dict, root: dict, example: dict) -> list[str]:
    from simcore.base import patterns
    from simcore.workload.traces import load_catalogue

    entry = _resolved(node.get("additionalProperties", {}), root)
    choice = [alt["required"][0] for alt in entry.get("oneOf", []) if alt.get("required")]
    lines = ["", "Each entry is a mapping" + (
        f" with exactly one of {' or '.join(f'`{c}`' for c in choice)}" if choice else "")
        + ":", "", "| key | takes | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{name}` | {takes} | {default} | {meaning} |"
              for name, takes, default, meaning in _key_rows(entry, root, "", depth=1)]
    traces = ", ".join(f"`{name}`" for name in load_catalogue(patterns.CATALOGUE))
    used = _models_in_use()
    lines += ["", f"`trace:` takes the name of a trace in the catalogue (`traces.catalogue`); "
              f"the repository's `config/traces.yaml` lists {traces} (`simcore list traces`).",
              "",
              "### Workload models", "",
              "`synthetic:` takes `model:` and the model's parameters; a parameter whose "
              "default says",
              "*required* must be given. Each seed of an experiment samples the model "
              "again.", ""]
    for row in MODELS.values():
        lines += [f"#### `{row.name}`", "", row.summary + ".", ""]
        lines += _parameter_table(row.parameters, "parameter")
        found = used.get(row.name)
        if found is not None:
            path, name, entry = found
            lines += ["", f"In `{path}`:", "", "```yaml", f"{name}: {_flow(entry)}",
                      "```"]
        lines.append("")
    return lines[:-1]


def _models_in_use() -> dict[str, tuple[str, str, Any]]:
    """Each model's first workload in the repository's configurations: (file, workload
    name, entry)."""
    from simcore.base.patterns import REPOSITORY
    from simcore.sweep.config import read_config

    found: dict[str, tuple[str, str, Any]] = {}
    files = sorted((REPOSITORY / "config").glob("*.yaml"), key=lambda p: p.name != "config.yaml")
    for path in files:
        workloads = read_config(path).get("workloads")
        for name, entry in (workloads if isinstance(workloads, dict) else {}).items():
            model = (entry.get("synthetic") or {}).get("model") if isinstance(entry, dict) \
                else None
            if isinstance(model, str):
                found.setdefault(model, (f"config/{path.name}", name, entry))
    return found


def _machines(key: str, node: dict, root: dict, example: dict) -> list[str]:
    from simcore.machines.descriptions import machines_dirs

    wired = sorted({p.stem for d in machines_dirs() if d.is_dir() for p in d.glob("*.yaml")})
    machine = _resolved(node.get("additionalProperties", {}), root)
    alternatives = [_resolved(alt, root) for alt in machine.get("oneOf", [machine])]
    mapping: dict[str, Any] = next((alt for alt in alternatives if "properties" in alt), {})
    options = all_options()
    keys = [k for k in mapping.get("properties", {}) if k not in options]
    lines = ["", "A machine is a spec string `kind:size` (the kind's default allocator), or a "
             "mapping of " + ", ".join(f"`{k}`" for k in keys) + " and the allocator's options:",
             "", "```yaml", "machines:"]
    lines += [f"  {kind.name}: \"{kind.example}\"" for kind in list(KINDS.values())[:2]]
    curve = next((a for a in ALLOCATORS.values() if a.ordered and any(
        p.choices for p in a.parameters)), None)
    if curve is not None:
        option = next(p for p in curve.parameters if p.choices)
        lines += [f"  {curve.name}:", f"    spec: \"{curve.machine_example}\"",
                  f"    allocator: {curve.name}", "    ordering: hilbert",
                  f"    {option.name}: {_flow(_other(option))}"]
    mtbf = next((p for p in FAILURE_OPTIONS if p.optional and p.type is float), None)
    if mtbf is not None:
        lines += ["  failing:", f"    spec: \"{KINDS['torus'].example}\"",
                  f"    {mtbf.name}: 2000000.0"]
    lines += ["```", "",
              "| key | takes | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{name}` | {takes} | {default} | {meaning} |"
              for name, takes, default, meaning in _key_rows(
                  {"properties": {k: mapping["properties"][k] for k in keys},
                   "required": mapping.get("required", [])}, root, "")]
    lines += ["", "### Machine kinds", "",
              "Sizes count allocation units (nodes, supernodes, midplanes). A kind with a "
              "grammar of its own",
              "takes the argument its example shows.", "",
              "| kind | spec | dimensions | default allocator | what it is |",
              "|---|---|---|---|---|"]
    for kind in KINDS.values():
        dims = (f"{kind.min_dims}" if kind.min_dims == kind.max_dims else
                f"{kind.min_dims} or more" if kind.max_dims is None else
                f"{kind.min_dims} to {kind.max_dims}")
        name = f"`{kind.name}`" + (f" ({', '.join(f'`{w}`' for w in wired)})"
                                   if kind.wired else "")
        lines.append(f"| {name} | `{kind.example}` | "
                     f"{'its own' if kind.grammar else dims} | `{kind.default_allocator}` | "
                     f"{kind.summary} |")
    if wired:
        lines += ["", f"A wired machine is named by its description file in "
                  f"`config/machines/`: {', '.join(f'`{w}`' for w in wired)}."]
    lines += ["", "### Allocators", "",
              "`allocator:` takes one of these, on machines of the kinds it lists.", "",
              "| allocator | kinds | options | what it does |", "|---|---|---|---|"]
    for row in ALLOCATORS.values():
        names = ", ".join(f"`{p.name}`" for p in row.parameters) or "—"
        lines.append(f"| `{row.name}` | {', '.join(row.kinds)} | {names} | {row.summary} |")
    own = {p.name: p for row in ALLOCATORS.values() for p in row.parameters}
    users = {name: [r.name for r in ALLOCATORS.values() if name in
                    {p.name for p in r.parameters}] for name in own}
    lines += ["", "### Allocator options", "",
              "Set in a machine's mapping, beside `spec` and `allocator`.", ""]
    lines += _parameter_table(tuple(own.values()), "option",
                              {n: ", ".join(f"`{u}`" for u in us) for n, us in users.items()},
                              "allocators")
    lines += ["", "### Failures", "",
              "Every machine, whatever its allocator, takes the options of a failure "
              "process:", ""]
    lines += _parameter_table(FAILURE_OPTIONS, "option")
    return lines


def _policies(key: str, node: dict, root: dict, example: dict) -> list[str]:
    parameters = all_parameters()
    lines = ["", "A policy is a mapping of `scheduler:` and any of that scheduler's "
             "parameters (the others keep",
             "their defaults):", "", "```yaml", "policies:"]
    for row in SCHEDULERS.values():
        if len(row.parameters) >= 3 and not row.engine:
            values = {p.name: _other(p) for p in row.parameters[1:3]}
            lines.append(f"  {row.name}-tuned: {_flow({'scheduler': row.name, **values})}")
            break
    lines += ["```", "", "### Schedulers", "",
              "| scheduler | what it does | needs | parameters |", "|---|---|---|---|"]
    for row in SCHEDULERS.values():
        lines.append(f"| `{row.name}` | {row.summary} | "
                     f"{', '.join(sorted(row.needs)) or '—'} | "
                     f"{', '.join(f'`{p.name}`' for p in row.parameters) or '—'} |")
    needed = sorted({c for row in SCHEDULERS.values() for c in row.needs})
    lines += ["", "A scheduler runs only on machines that offer what it needs; an experiment "
              "leaves it out on the",
              "others (and refuses a machine none of its policies can run on):", ""]
    lines += [f"- {c}: {CAPABILITIES[c]};" for c in needed]
    lines[-1] = lines[-1].rstrip(";") + "."
    users = {name: [r.name for r in SCHEDULERS.values() if name in r.parameter_names]
             for name in parameters}
    lines += ["", "### Scheduler parameters", ""]
    lines += _parameter_table(tuple(parameters.values()), "parameter",
                              {n: _which(us, list(SCHEDULERS)) for n, us in users.items()},
                              "schedulers")
    return lines


def _experiments(key: str, node: dict, root: dict, example: dict) -> list[str]:
    experiment = _resolved(node.get("additionalProperties", {}), root)
    properties = experiment.get("properties", {})
    required = set(experiment.get("required", []))
    lines = ["", "An experiment runs every workload on every machine under every policy it "
             "names (one shard,",
             "one Snakemake job, per workload x machine x policy) at every point of its grid "
             "and every seed.", "",
             "| key | required | takes | default |", "|---|---|---|---|"]
    lines += [f"| `{name}` | {'yes' if name in required else 'no'} | "
              f"{_takes(value, root)} | {'' if name in required else _default(value, False)} |"
              for name, value in properties.items()]
    examples = [values for values in (example.get(key) or {}).values()
                if isinstance(values, Mapping)]
    for name, value in properties.items():
        value = _resolved(value, root)
        lines += ["", f"### `{name}`", ""]
        seen = next((e[name] for e in examples if name in e), None)
        lines += _summary(name, value, root, name in required, seen)
        if name == FIXED:
            lines += ["", f"Each key is a workload transform (the table at the end of this "
                      f"section) and its one value for every run. A transform may be set "
                      f"in `{FIXED}:` or in `{GRID}:`, not both; one left out keeps its "
                      f"default."]
        elif name == GRID:
            lines += ["", *_grid_prose(value)]
    moved = ", ".join(f"`{name}`" for name in MOVED)
    lines += ["", "### Workload transforms", "",
              f"What `{FIXED}:` and `{GRID}:` take: how a workload's jobs become a run's jobs "
              f"(`simcore list transforms`). Transforms that draw random numbers draw them "
              f"from the run's seed. On a trace that records waits, a run whose transforms "
              f"keep the log's arrivals and jobs (each of {moved} at its default, no "
              f"extension transform acting) replays the log: its summary holds its fidelity "
              f"to the recorded starts (the `fidelity_*` columns and the `fidelity` table, "
              f"docs/outputs.md), so a grid over a scheduler's parameters reads how each "
              f"value agrees with the log (docs/schedules.md, \"Against the log\").", ""]
    lines += _parameter_table(tuple(f.metadata["parameter"] for f in transforms().values()),
                              "transform")
    return lines


def _grid_prose(grid: dict) -> list[str]:
    """What the grid takes, from the names its schema lists."""
    names = list(grid.get("properties", {}))
    known = {*transforms(), *ALIASES}
    scheduler = [n for n in names if n not in known and n in all_parameters()]
    allocator = set(all_options())
    machine = [n for n in names if n not in known and n not in scheduler and n in allocator]
    other = [n for n in names if n not in known and n not in scheduler and n not in machine]
    text = (f"Each key takes a non-empty list of values; the experiment runs every combination "
            f"of them, each with every seed. `{GRID}:` takes the workload transforms (the "
            f"table at the end of this section)")
    also = []
    if scheduler:
        also.append("the scheduler parameters " + ", ".join(f"`{n}`" for n in scheduler)
                    + " (described under `policies`)")
    if machine:
        also.append("the allocator and failure options " + ", ".join(f"`{n}`" for n in machine)
                    + " (described under `machines`)")
    if other:
        also.append(", ".join(f"`{n}`" for n in other))
    if also:
        text += ", " + " and ".join(also) + ", crossed with the transforms."
    else:
        text += (". Scheduler parameters and allocator options are listed under `policies` "
                 "and `machines`: each policy and machine sets its own (one policy or machine "
                 "per value to compare).")
    if grid.get("additionalProperties") not in (None, False):
        text += " Other keys take " + _takes(grid["additionalProperties"], {}) + "."
    return [text]


# --- schema to words --------------------------------------------------------------------

def _resolved(node: Any, root: dict) -> Any:
    """`node` with its `$ref` replaced by what it points to (its own keys kept)."""
    while isinstance(node, dict) and "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _takes(node: Any, root: dict) -> str:
    """What a value of the schema `node` looks like, in words."""
    node = _resolved(node, root)
    if not isinstance(node, dict):
        return "anything"
    for key in ("oneOf", "anyOf"):
        if key in node:
            alternatives = [_resolved(a, root) for a in node[key]]
            null = any(a.get("type") == "null" for a in alternatives)
            words = [_takes(a, root) for a in alternatives if a.get("type") != "null"]
            tags = _discriminator(alternatives)
            if tags:
                key, values = tags
                return (f"a mapping of `{key}`: {_either(f'`{v}`' for v in values)}, and "
                        f"that {key}'s keys (below)")
            return _either(dict.fromkeys(words)) + (", or null" if null else "")
    if "enum" in node:
        if len(node["enum"]) > 6:
            return f"one of {len(node['enum'])} names (below)"
        return _either(f"`{_flow(v)}`" for v in node["enum"])
    if "const" in node:
        return f"`{_flow(node['const'])}`"
    kind = node.get("type")
    if kind == "string":
        return "a name" if node.get("pattern") == NAME.pattern else "a string"
    if kind == "boolean":
        return "true or false"
    if kind in ("integer", "number"):
        return ("an integer" if kind == "integer" else "a number") + _bounds(node)
    if kind == "array":
        items = _takes(node.get("items", {}), root)
        many = "a non-empty list" if node.get("minItems", 0) >= 1 else "a list"
        return f"{many} of {_plural(items)}"
    if kind == "object" or "properties" in node or "additionalProperties" in node:
        properties = node.get("properties", {})
        if isinstance(node.get("additionalProperties"), dict) and not properties:
            return "a mapping of names to entries (below)"
        if len(properties) > 6:
            items = _resolved(next(iter(properties.values())), root)
            to = " to lists of values" if items.get("type") == "array" else ""
            return f"a mapping of any of {len(properties)} names (listed below){to}"
        if properties and len(properties) <= 2 and all(
                _resolved(v, root).get("type") in ("integer", "number", "string", "boolean")
                for v in properties.values()):
            return "a mapping {" + ", ".join(f"`{k}`: {_takes(v, root)}"
                                             for k, v in properties.items()) + "}"
        return "a mapping of " + ", ".join(f"`{k}`" for k in properties) if properties \
            else "a mapping"
    return "anything"


def _discriminator(alternatives: list[dict]) -> tuple[str, list[Any]] | None:
    """The key whose constant tells object alternatives apart (a policy's `scheduler`, a
    model's `model`) and its values, if there is one."""
    consts = [{k: v["const"] for k, v in a.get("properties", {}).items()
               if isinstance(v, dict) and "const" in v} for a in alternatives]
    shared = set.intersection(*(set(c) for c in consts)) if consts else set()
    if len(alternatives) < 2 or not shared:
        return None
    key = sorted(shared)[0]
    return key, [c[key] for c in consts]


def _bounds(node: dict) -> str:
    bounds = []
    if node.get("minimum") is not None and node["minimum"] > -INT64_MAX - 1:
        bounds.append(f">= {node['minimum']:g}")
    if node.get("exclusiveMinimum") is not None:
        bounds.append(f"> {node['exclusiveMinimum']:g}")
    if node.get("maximum") is not None and node["maximum"] < INT64_MAX:
        bounds.append(f"<= {node['maximum']:g}")
    return (" " + " and ".join(bounds)) if bounds else ""


def _plural(words: str) -> str:
    for noun in ("integer", "number", "name", "string", "mapping"):
        for article in ("a ", "an "):
            if words.startswith(article + noun):
                return noun + "s" + words[len(article + noun):]
    return f"values, each {words}"


def _meaning(node: Any, root: dict) -> str:
    return " ".join(str(_resolved(node, root).get("description", "")).split())


def _default(node: Any, required: bool) -> str:
    if required:
        return "required"
    if "default" in node:
        return f"`{_flow(node['default'])}`"
    inner = node.get("properties", {})
    if any(isinstance(v, dict) and "default" in v for v in inner.values()):
        return "each key's default (below)"
    return "not set"


def _summary(key: str, node: dict, root: dict, required: bool, seen: Any) -> list[str]:
    """A key's meaning, then what it takes, its default and an example."""
    meaning = _meaning(node, root)
    lines = [meaning[:1].upper() + meaning[1:] + ".", ""] if meaning else []
    lines += [f"- takes: {_takes(node, root)}",
              "- required" if required else f"- default: {_default(node, False)}"]
    shown = node["examples"][0] if node.get("examples") else seen
    if shown is not None:
        text = f"{key}: {_flow(shown)}"
        if len(text) <= 70:
            lines.append(f"- example: `{text}`")
        else:
            lines += ["- example:", "", "```yaml", yaml.safe_dump(
                {key: shown}, sort_keys=False, default_flow_style=None).rstrip(), "```"]
    return lines


def _key_rows(node: Any, root: dict, prefix: str,
              depth: int = 3) -> Iterable[tuple[str, str, str, str]]:
    """(dotted key, takes, default, meaning) of every key of an object schema, and of the
    objects inside it (up to `depth` levels)."""
    node = _resolved(node, root)
    required = set(node.get("required", []))
    for name, value in node.get("properties", {}).items():
        value = _resolved(value, root)
        inner = value.get("properties")
        yield (prefix + name, _takes(value, root) if not inner or depth <= 1 else "a mapping",
               _default(value, name in required), _meaning(value, root))
        if inner and depth > 1:
            yield from _key_rows(value, root, f"{prefix}{name}.", depth - 1)


# --- registry tables --------------------------------------------------------------------

def _parameter_table(parameters: tuple[Parameter, ...], what: str,
                     extra: Mapping[str, str] | None = None,
                     heading: str = "") -> list[str]:
    head = f"| {what} | type | default | range | unit | meaning |"
    rule = "|---|---|---|---|---|---|"
    if extra is not None:
        head, rule = head + f" {heading} |", rule + "---|"
    rows = [head, rule]
    for p in parameters:
        required = p.default is None and not p.optional
        row = (f"| `{p.name}` | {p.type.__name__}{' or null' if p.optional else ''} | "
               f"{'required' if required else f'`{_flow(p.default)}`'} | {_range(p)} | "
               f"{p.unit or ''} | {p.meaning} |")
        rows.append(row + (f" {extra.get(p.name, '')} |" if extra is not None else ""))
    return rows


def _range(p: Parameter) -> str:
    if p.choices:
        return _either(f"`{c}`" for c in p.choices)
    if p.type is bool:
        return "true or false"
    if p.type is str:
        return "a string"
    low = None if p.minimum is None else f"{'>' if p.exclusive_minimum else '>='} {p.minimum:g}"
    if p.minimum is not None and p.maximum is not None and not p.exclusive_minimum:
        return f"{p.minimum:g} to {p.maximum:g}"
    return " and ".join(b for b in (low, None if p.maximum is None else f"<= {p.maximum:g}")
                        if b) or "any"


def _either(words: Iterable[str]) -> str:
    """'a', 'a or b', 'a, b or c'."""
    words = list(words)
    return " or ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def _which(users: list[str], every: list[str]) -> str:
    if users == every:
        return "all"
    if len(users) > len(every) / 2:
        return "all but " + ", ".join(f"`{n}`" for n in every if n not in users)
    return ", ".join(f"`{n}`" for n in users)


def _other(p: Parameter) -> Any:
    """A valid value of `p` other than its default, for an example."""
    if p.choices:
        return next(c for c in p.choices if c != p.default)
    if p.type is bool:
        return not p.default
    value = p.type((p.default or p.minimum or 0) + 1)
    return min(value, p.type(p.maximum)) if p.maximum is not None else value


def _flow(value: Any) -> str:
    """`value` as one line of YAML."""
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10**6)
    return text.strip().removesuffix("...").strip()
