"""Workloads: job tables from traces and synthetic models, and their transforms."""
