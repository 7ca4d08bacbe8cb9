"""Shared by the end-to-end scripts: failing with a message, and finding the shared models
(a missing model file is a failure that says what to set, never a skip)."""
import os
import sys

PROMPT = "Once upon a time"


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def need(models, name):
    path = os.path.join(models, name)
    if not os.path.isfile(path):
        fail(f"{path} is missing: put the shared models there or set KILN_MODELS_DIR "
             f"to the directory holding {name}")
    return path
