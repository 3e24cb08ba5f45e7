"""Durable state: the SQLite store, and an in-memory twin of its message ports."""
