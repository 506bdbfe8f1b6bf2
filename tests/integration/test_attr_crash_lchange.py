#!/usr/bin/python3
"""test_attr_crash.py's crash states of renames, hard links and unlinks of
one symbol-table group in one commit (h5_link_change_batch, the daemon's
write-behind of them: behind/mbatch.c): one part of that enumeration, a
program of its own so that make -j2 runs the parts side by side
(test_attr_crash.py PARTS)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_attr_crash  # noqa: E402

if __name__ == "__main__":
    sys.exit(test_attr_crash.main(["lchange"]))
