"""Experiment harnesses of the chapters: measurements that more than one chapter runs."""
