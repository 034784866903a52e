#!/usr/bin/env python3
"""Exit 0 when two fixture files carry the same content, ignoring bytes PyTorch does not reproduce.

Used by export_all.sh so that regenerating leaves unchanged fixtures untouched in git. Ignored:
  * zip entry timestamps and layout (torch 2.6 legacy zips are written by Python's zipfile with the
    current time); entries are compared by name and bytes;
  * `.data/serialization_id` (derived from the content and, for core programs, from the next item);
  * TorchScript `code/**.debug_pkl` (source ranges with the exporting script's line numbers; readers
    ignore them);
  * `"graph_id": <int>` inside `from_node` node metadata of ExportedProgram JSON (a Python object id,
    present in programs produced by run_decompositions());
  * `<eval_with_key>.N` in stack traces: a process-wide FX code-generation counter, so it depends
    on which fixtures were exported before in the same run (`--only`).
Any other difference, or a file that is not a zip, falls back to a byte comparison.
Host-side helper: standard library only.
"""

import re
import sys
import zipfile

GRAPH_ID = re.compile(rb'(\\*"graph_id\\*": )-?\d+')
EVAL_KEY = re.compile(rb"<eval_with_key>\.\d+")


def normalise(name, data):
    if name.endswith("serialization_id") or name.endswith(".debug_pkl"):
        return b""
    if name.endswith(".json"):
        return EVAL_KEY.sub(b"<eval_with_key>.#", GRAPH_ID.sub(rb"\1#", data))
    return data


def entries(path):
    with zipfile.ZipFile(path) as zf:
        return {i.filename: normalise(i.filename, zf.read(i.filename)) for i in zf.infolist()}


def main(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        da, db = fa.read(), fb.read()
    if da == db:
        return 0
    if not (zipfile.is_zipfile(a) and zipfile.is_zipfile(b)):
        return 1
    try:
        return 0 if entries(a) == entries(b) else 1
    except (zipfile.BadZipFile, OSError):
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
