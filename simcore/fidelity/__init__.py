"""Replay fidelity: how closely a simulated schedule of a log follows the starts the
machine recorded in it."""
