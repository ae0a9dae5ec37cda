"""Starts a gradlab kernel with jupyter_client, then dies without shutting it down.

Prints the kernel's pid; test/kernel/protocol.test.ts checks the kernel exits by itself.
"""
import os
import sys

from jupyter_client.manager import start_new_kernel

km, kc = start_new_kernel(kernel_name="gradlab", startup_timeout=60)
print(km.provisioner.process.pid, flush=True)
sys.stdout.flush()
os._exit(0)
