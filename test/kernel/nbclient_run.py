"""Executes a notebook with Debian's nbclient on the gradlab kernel and validates it with nbformat.

usage: python3 nbclient_run.py IN.ipynb OUT.ipynb
"""
import sys

import nbformat
from nbclient import NotebookClient

nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, kernel_name="gradlab", timeout=60, startup_timeout=60).execute()
nbformat.validate(nb)
nbformat.write(nb, sys.argv[2])
