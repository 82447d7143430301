"""Demos: callers of the library that show what it does on recorded outputs."""
