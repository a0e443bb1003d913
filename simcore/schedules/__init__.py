"""Schedules of one run: where and when every job ran, exported and drawn."""
