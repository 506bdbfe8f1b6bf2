#!/usr/bin/python3
"""test_append_crash.py's crash states of appends to implicit, single-chunk and extensible array indexes: one part of that
enumeration, a program of its own so that make -j2 runs the parts side
by side (test_append_crash.py PARTS)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_append_crash  # noqa: E402

if __name__ == "__main__":
    test_append_crash.main(["other"])
