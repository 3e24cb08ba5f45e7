"""Durable state: the SQLite store, one module per port, and its migrations."""
