"""Minimal GGUF v3 writer and metadata/tensor reader for the ONNX test models (issue 6), so the
same weights can be fed to kiln's GGUF path. Layout (ggml include/gguf.h): "GGUF", u32 version,
u64 tensor count, u64 kv count, kv pairs (string key, u32 type, value), tensor infos (name,
u32 n_dims, u64 dims with dims[0] = row length, u32 ggml type, u64 offset into the data),
padding to general.alignment (32), the data, each tensor padded to the alignment."""
import struct

import numpy as np

ALIGNMENT = 32
# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
           BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
# ggml tensor types this writer stores
GGML_F32, GGML_F16 = 0, 1
_GGML_NP = {GGML_F32: np.float32, GGML_F16: np.float16}


def _string(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


class GgufWriter:
    def __init__(self):
        self.kv = []  # (key, type, value[, elem type])
        self.tensors = []  # (name, numpy array, ggml type)

    def add(self, key, vtype, value, elem=None):
        if any(k == key for k, *_ in self.kv):
            raise ValueError(f"duplicate GGUF key {key}")
        self.kv.append((key, vtype, value, elem))

    def add_tensor(self, name, array, ggml_type=GGML_F32):
        """array in row-major numpy shape [.., rows, row_length]; stored as ggml dims reversed."""
        self.tensors.append((name, np.ascontiguousarray(array, dtype=_GGML_NP[ggml_type]),
                             ggml_type))

    def add_tensor_lazy(self, name, shape, ggml_type, produce):
        """A tensor of numpy shape `shape` whose data produce() returns only when write()
        reaches it, so a big model is written holding one tensor at a time."""
        self.tensors.append((name, (tuple(shape), produce), ggml_type))

    @staticmethod
    def _value(vtype, value, elem):
        if vtype == STRING:
            return _string(value)
        if vtype == ARRAY:
            out = struct.pack("<IQ", elem, len(value))
            if elem == STRING:
                return out + b"".join(_string(v) for v in value)
            return out + b"".join(struct.pack(_SCALAR[elem], v) for v in value)
        return struct.pack(_SCALAR[vtype], value)

    def write(self, path):
        head = b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))
        for key, vtype, value, elem in self.kv:
            head += _string(key) + struct.pack("<I", vtype) + self._value(vtype, value, elem)
        offset = 0
        for name, arr, gtype in self.tensors:
            shape = arr[0] if isinstance(arr, tuple) else arr.shape
            dims = list(reversed(shape))
            head += _string(name) + struct.pack("<I", len(dims))
            head += b"".join(struct.pack("<Q", d) for d in dims)
            head += struct.pack("<IQ", gtype, offset)
            size = int(np.prod(shape)) * np.dtype(_GGML_NP[gtype]).itemsize
            offset += size + (-size % ALIGNMENT)
        head += b"\0" * (-len(head) % ALIGNMENT)
        with open(path, "wb") as f:
            f.write(head)
            for name, arr, gtype in self.tensors:
                if isinstance(arr, tuple):
                    shape, produce = arr
                    arr = np.ascontiguousarray(produce(), dtype=_GGML_NP[gtype])
                    if arr.shape != shape:
                        raise ValueError(f"{name}: produced {arr.shape}, declared {shape}")
                data = arr.tobytes()
                f.write(data + b"\0" * (-len(data) % ALIGNMENT))


class GgufReader:
    """Reads all metadata (key -> (type, value, elem type)) and tensor infos/data of a GGUF
    file. Trusts its input: it only reads the shared test models and this writer's output."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        self.pos = 0
        if self.buf[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        self.pos = 4
        self.version, n_tensors, n_kv = self._unpack("<IQQ")
        self.kv = {}
        for _ in range(n_kv):
            key = self._str()
            (vtype,) = self._unpack("<I")
            elem = None
            if vtype == ARRAY:
                elem, n = self._unpack("<IQ")
                value = [self._read(elem) for _ in range(n)]
            else:
                value = self._read(vtype)
            self.kv[key] = (vtype, value, elem)
        infos = []
        for _ in range(n_tensors):
            name = self._str()
            (nd,) = self._unpack("<I")
            dims = self._unpack("<" + "Q" * nd)
            gtype, off = self._unpack("<IQ")
            infos.append((name, dims, gtype, off))
        align = self.kv.get("general.alignment", (U32, ALIGNMENT, None))[1]
        data = (self.pos + align - 1) // align * align
        self.tensors = {}
        for name, dims, gtype, off in infos:
            dt = _GGML_NP[gtype]
            count = int(np.prod(dims))
            arr = np.frombuffer(self.buf, dtype=dt, count=count, offset=data + off)
            self.tensors[name] = (gtype, arr.reshape(tuple(reversed(dims))))

    def _unpack(self, fmt):
        out = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return out

    def _str(self):
        (n,) = self._unpack("<Q")
        s = self.buf[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def _read(self, vtype):
        if vtype == STRING:
            return self._str()
        return self._unpack(_SCALAR[vtype])[0]
