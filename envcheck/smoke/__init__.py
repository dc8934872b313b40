"""Smoke tests run in child processes: device adapters, the op suite, parity, collectives."""
