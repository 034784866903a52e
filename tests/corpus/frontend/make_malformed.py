#!/usr/bin/env python3
"""Regenerates malformed/ from executorch_linear.pt2: one broken archive per error case, and
malformed/EXPECTED.txt with a substring each error message must contain. Standard library only.

    python3 tests/corpus/frontend/make_malformed.py
"""
import io
import json
import os
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "executorch_linear.pt2")
OUT = os.path.join(HERE, "malformed")
ROOT = "linear_3/"

with open(SRC, "rb") as f:
    ORIG = f.read()
zin = zipfile.ZipFile(io.BytesIO(ORIG))
ENTRIES = [(i.filename, zin.read(i.filename)) for i in zin.infolist()]
expected = []


def rezip(entries, compress=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = compress
            z.writestr(info, data)
    return buf.getvalue()


def modified(name, fn):
    return [(n, fn(d) if n == ROOT + name else d) for n, d in ENTRIES]


def model_json_edit(fn):
    def edit(d):
        j = json.loads(d)
        fn(j)
        return json.dumps(j).encode()
    return modified("models/model.json", edit)


def case(file, data, message):
    with open(os.path.join(OUT, file), "wb") as f:
        f.write(data)
    expected.append(f"{file}\t{message}")


def graph(j):
    return j["graph_module"]["graph"]


# Zip structure.
tail = ORIG[7620:]
cut = ORIG[: 7000 - len(tail)]
moved = bytearray(tail)
struct.pack_into("<Q", moved, 56 + 8, len(cut))
case("truncated.pt2", cut + bytes(moved), "central directory at 6776+844 exceeds file size 7000")
bad = bytearray(ORIG)
bad[6776 + 1] = 0x58
case("bad_central_signature.pt2", bytes(bad), "expected 0x02014b50")
big = bytearray(ORIG)
struct.pack_into("<II", big, 6776 + 20, 0x7FFFFFF0, 0x7FFFFFF0)
case("huge_declared_size.pt2", bytes(big), "declared 2147483632 bytes at offset 64")
case("path_traversal.pt2", rezip(ENTRIES + [("linear_3/../../etc/passwd", b"x")]),
     "'..' path segment is not allowed")
case("absolute_path.pt2", rezip([("/etc/passwd", b"x")] + ENTRIES), "absolute path is not allowed")
case("deflated.pt2", rezip(ENTRIES, zipfile.ZIP_DEFLATED), "is compressed (method 8, deflate)")
case("not_a_zip.pt2", b"\x80\x02}q\x00.", "not a zip archive")
case("outside_root.pt2", rezip(ENTRIES + [("other/file", b"x")]),
     "entry 'other/file' is outside the archive root 'linear_3'")

# Archive layout.
case("missing_model_json.pt2", rezip([(n, d) for n, d in ENTRIES if not n.endswith("model.json")]),
     "no linear_3/models/<name>.json entry")
case("archive_version_1.pt2", rezip(modified("archive_version", lambda d: b"1")),
     "archive_version '1' is not supported (expected 0)")
case("big_endian.pt2", rezip(modified("byteorder", lambda d: b"big")),
     "byteorder 'big' is not supported")
case("torch_save_checkpoint.pt", zin.read(ROOT + "data/sample_inputs/model.pt"),
     "is a torch.save checkpoint")

# Graph JSON.
case("invalid_json.pt2", rezip(modified("models/model.json", lambda d: d[:100] + b"}}")),
     "models/model.json:1:")
case("bare_word_json.pt2", rezip(modified("models/model.json", lambda d: d.replace(b'"kind": 1', b'"kind": Inf', 1))),
     "invalid JSON")
case("unknown_union_tag.pt2", rezip(model_json_edit(
    lambda j: graph(j)["nodes"][0]["inputs"][0].__setitem__("arg", {"as_foo": 1}))),
     "graph_module.graph.nodes[0].inputs[0].arg: unknown Argument tag 'as_foo'")
case("unknown_dtype.pt2", rezip(model_json_edit(
    lambda j: graph(j)["tensor_values"]["x"].__setitem__("dtype", 99))),
     "dtype 99 is not an export ScalarType")
case("dtype_not_int.pt2", rezip(model_json_edit(
    lambda j: graph(j)["tensor_values"]["x"].__setitem__("dtype", "float"))),
     "graph_module.graph.tensor_values.x.dtype: expected integer, found string")
case("negative_dim.pt2", rezip(model_json_edit(
    lambda j: graph(j)["tensor_values"]["x"]["sizes"][0].__setitem__("as_int", -3))),
     "tensor 'x' size 0 is negative (-3)")
case("newer_schema.pt2", rezip(model_json_edit(
    lambda j: j.__setitem__("schema_version", {"major": 9, "minor": 0}))),
     "schema major 9 is newer than the newest supported (8)")
case("dangling_name.pt2", rezip(model_json_edit(
    lambda j: graph(j)["nodes"][0]["inputs"][0]["arg"]["as_tensor"].__setitem__("name", "x9"))),
     "node 'linear' uses 'x9' which is never defined")
case("input_specs_count.pt2", rezip(model_json_edit(
    lambda j: j["graph_module"]["signature"]["input_specs"].pop())),
     "input_specs: has 2 entries but graph.inputs has 3")

# Weights.
def weights_edit(fn):
    def edit(d):
        j = json.loads(d)
        fn(j["config"])
        return json.dumps(j).encode()
    return modified("data/weights/model_weights_config.json", edit)

case("weight_view_exceeds_storage.pt2", rezip(weights_edit(
    lambda c: c["linear.weight"]["tensor_meta"]["storage_offset"].__setitem__("as_int", 1))),
     "linear.weight: needs 40 bytes (offset 1, sizes [3,3], strides [3,1]) but the storage has 36")
case("missing_weight_file.pt2", rezip(weights_edit(
    lambda c: c["linear.weight"].__setitem__("path_name", "weight_7"))),
     "linear_3/data/weights/weight_7 referenced by 'linear.weight' not found")
case("weight_path_traversal.pt2", rezip(weights_edit(
    lambda c: c["linear.weight"].__setitem__("path_name", "../models/model.json"))),
     "path_name '../models/model.json' must be a plain file name")
case("weight_not_in_config.pt2", rezip(weights_edit(lambda c: c.pop("linear.bias"))),
     "'linear.bias' (input 'p_linear_bias') not found in")
case("weight_wrong_dtype.pt2", rezip(weights_edit(
    lambda c: c["linear.bias"]["tensor_meta"].__setitem__("dtype", 5))),
     "has 12 bytes, not a multiple of the element size 8")

# Pickles (the sample-input torch.save zip).
def sample_edit(fn):
    def edit(d):
        inner = zipfile.ZipFile(io.BytesIO(d))
        items = [(i.filename, inner.read(i.filename)) for i in inner.infolist()]
        items = [(n, fn(b) if n == "archive/data.pkl" else b) for n, b in items]
        return rezip(items)
    return modified("data/sample_inputs/model.pt", edit)

case("pickle_disallowed_global.pt2", rezip(sample_edit(
    lambda p: p.replace(b"ctorch._utils\n_rebuild_tensor_v2\n", b"cos\nsystem\n" + b"\x00" * 21, 1))),
     "GLOBAL 'os system' is not allowed")
case("pickle_bad_opcode.pt2", rezip(sample_edit(lambda p: p[:37] + b"\xfe" + p[38:])),
     "unknown or unsupported opcode 0xfe")
case("pickle_truncated.pt2", rezip(sample_edit(lambda p: p[:90])),
     "model.pt!archive/data.pkl@0x53: string of 3 bytes but only 2 remain")
case("pickle_storage_size.pt2", rezip(sample_edit(lambda p: p.replace(b"K\x03t", b"K\x04t", 1))),
     "declares 4 elements = 16 bytes but the record has 12")

with open(os.path.join(OUT, "EXPECTED.txt"), "w") as f:
    f.write("# file<TAB>substring of the error message (generated by make_malformed.py)\n")
    f.write("\n".join(expected) + "\n")
