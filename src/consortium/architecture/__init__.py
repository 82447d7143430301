"""The package reading its own shape: which module imports which, and between which rooms (the
sub-packages). `scripts/architecture.py` draws it into docs/architecture.md and
`tests/test_architecture.py` checks it (no cycle, the plug-in kept out of generic code).

A room of its own, importing none of the package's modules and imported by none of them: it
reads the source tree as text (`ast`), so it sits on no floor of the program it describes, and
it is not `core/`, which holds what the program itself runs on."""
