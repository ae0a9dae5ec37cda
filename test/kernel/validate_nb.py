"""Validates notebooks against the nbformat schema. usage: python3 validate_nb.py NB.ipynb..."""
import sys

import nbformat

for path in sys.argv[1:]:
    nbformat.validate(nbformat.read(path, as_version=4))
print("valid")
