#include "compiler/frontends/onnx/OnnxLoad.h"

// ONNX's parser has an enumerator MAP_TYPE, which <sys/mman.h> defines as a macro: the
// ONNX headers come first.
#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <set>

namespace kiln::onnx {
namespace {

// A read-only mapping released when the last view's owner goes.
std::shared_ptr<void> mapFile(const std::string &path, size_t &size, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = "'" + path + "' is not a regular file";
    return nullptr;
  }
  size = size_t(st.st_size);
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<void>(static_cast<void *>(new char[1]), [](void *p) {
      delete[] static_cast<char *>(p);
    });
  }
  void *p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    error = "cannot map '" + path + "': " + std::strerror(errno);
    return nullptr;
  }
  return std::shared_ptr<void>(p, [size](void *q) { munmap(q, size); });
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

class Loader {
public:
  Loader(const std::string &path, Graph &g) : path_(path), dir_(directoryOf(path)), g_(g) {}

  bool tensor(const ::onnx::TensorProto &p, Tensor &t, std::string &error);
  bool attribute(const ::onnx::AttributeProto &p, Attribute &a, std::string &error);
  bool graph(const ::onnx::GraphProto &p, std::string &error);
  bool valueInfo(const ::onnx::ValueInfoProto &p, ValueInfo &v, std::string &error);

private:
  bool externalData(const ::onnx::TensorProto &p, Tensor &t, std::string &error);

  std::string path_, dir_;
  Graph &g_;
  std::map<std::string, std::pair<std::shared_ptr<void>, size_t>> external_;
};

bool Loader::externalData(const ::onnx::TensorProto &p, Tensor &t, std::string &error) {
  std::string location;
  uint64_t offset = 0, length = 0;
  bool haveLength = false;
  // Decimal digits only: std::stoull alone would read "12abc" as 12 and "-1" as 2^64-1.
  auto number = [](const std::string &s, uint64_t &out) {
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
      return false;
    out = std::stoull(s);
    return true;
  };
  for (const auto &kv : p.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if ((kv.key() == "offset" && !number(kv.value(), offset)) ||
               (kv.key() == "length" && !(haveLength = number(kv.value(), length)))) {
      error = "initializer '" + p.name() + "': external_data " + kv.key() + " '" + kv.value() +
              "' is not a number";
      return false;
    }
  }
  if (location.empty() || location.find("..") != std::string::npos || location[0] == '/') {
    error = "initializer '" + p.name() + "': external_data location '" + location +
            "' must name a file beside the model";
    return false;
  }
  std::string file = dir_ + "/" + location;
  auto it = external_.find(file);
  if (it == external_.end()) {
    size_t size = 0;
    std::string mapError;
    std::shared_ptr<void> m = mapFile(file, size, mapError);
    if (!m) {
      error = "initializer '" + p.name() + "': external data file missing: " + mapError;
      return false;
    }
    g_.keepAlive.push_back(m);
    it = external_.emplace(file, std::make_pair(m, size)).first;
  }
  const size_t fileSize = it->second.second;
  if (!haveLength)
    length = offset <= fileSize ? fileSize - offset : 0;
  if (offset > fileSize || length > fileSize - offset || length != t.nbytes) {
    error = "initializer '" + p.name() + "' needs " + std::to_string(t.nbytes) +
            " bytes at offset " + std::to_string(offset) + " of '" + location + "' (length " +
            std::to_string(length) + "), which holds " + std::to_string(fileSize) + " bytes";
    return false;
  }
  t.data = static_cast<const uint8_t *>(it->second.first.get()) + offset;
  return true;
}

bool Loader::tensor(const ::onnx::TensorProto &p, Tensor &t, std::string &error) {
  t.dtype = DType(p.data_type());
  const size_t esize = dtypeSize(t.dtype);
  if (esize == 0) {
    error = "initializer '" + p.name() + "' has element type " + std::to_string(p.data_type()) +
            ", which kiln does not read";
    return false;
  }
  uint64_t n = 1;
  for (int64_t d : p.dims()) {
    if (d < 0 || (d > 0 && n > (uint64_t(1) << 48) / uint64_t(d))) {
      error = "initializer '" + p.name() + "' has an invalid dimension " + std::to_string(d);
      return false;
    }
    t.dims.push_back(d);
    n *= uint64_t(d);
  }
  t.nbytes = n * esize;
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL)
    return externalData(p, t, error);
  if (p.has_raw_data()) {
    if (p.raw_data().size() != t.nbytes) {
      error = "initializer '" + p.name() + "' holds " + std::to_string(p.raw_data().size()) +
              " bytes of raw data; its shape needs " + std::to_string(t.nbytes);
      return false;
    }
    t.data = reinterpret_cast<const uint8_t *>(p.raw_data().data()); // the ModelProto lives on
    return true;
  }
  // Typed fields: widen or narrow into the raw layout. The values the file holds are
  // counted before anything is allocated: a declared shape is not a promise of data (a
  // 59-byte model declaring float[2^24, 2^24] made this allocate 2^50 bytes).
  const int have = t.dtype == DType::Float    ? p.float_data_size()
                   : t.dtype == DType::Double ? p.double_data_size()
                   : t.dtype == DType::Int64  ? p.int64_data_size()
                                              : p.int32_data_size();
  if (uint64_t(have) != n) {
    error = "initializer '" + p.name() + "' holds " + std::to_string(have) +
            " values; its shape needs " + std::to_string(n);
    return false;
  }
  auto owned = std::make_shared<std::vector<uint8_t>>(t.nbytes);
  uint8_t *out = owned->data();
  t.owned = owned;
  t.data = out;
  if (n == 0) // no bytes to copy (and out may be NULL, which memcpy must not get)
    return true;
  switch (t.dtype) {
  case DType::Float: std::memcpy(out, p.float_data().data(), t.nbytes); break;
  case DType::Double: std::memcpy(out, p.double_data().data(), t.nbytes); break;
  case DType::Int64: std::memcpy(out, p.int64_data().data(), t.nbytes); break;
  default: // int32, int8, uint8, bool, fp16, bf16 live in int32_data, one per element
    for (uint64_t i = 0; i < n; ++i) {
      int32_t v = p.int32_data(int(i));
      std::memcpy(out + i * esize, &v, esize); // little-endian: the low bytes
    }
  }
  return true;
}

bool Loader::attribute(const ::onnx::AttributeProto &p, Attribute &a, std::string &error) {
  using A = ::onnx::AttributeProto;
  switch (p.type()) {
  case A::FLOAT: a.kind = Attribute::Float, a.f = p.f(); break;
  case A::INT: a.kind = Attribute::Int, a.i = p.i(); break;
  case A::STRING: a.kind = Attribute::String, a.s = p.s(); break;
  case A::TENSOR:
    a.kind = Attribute::TensorValue;
    return tensor(p.t(), a.t, error);
  case A::FLOATS: a.kind = Attribute::Floats, a.floats.assign(p.floats().begin(), p.floats().end()); break;
  case A::INTS: a.kind = Attribute::Ints, a.ints.assign(p.ints().begin(), p.ints().end()); break;
  case A::STRINGS: a.kind = Attribute::Strings, a.strings.assign(p.strings().begin(), p.strings().end()); break;
  case A::GRAPH: case A::GRAPHS: a.kind = Attribute::Graph; break;
  default: a.kind = Attribute::Other;
  }
  return true;
}

bool Loader::valueInfo(const ::onnx::ValueInfoProto &p, ValueInfo &v, std::string &error) {
  v.name = p.name();
  if (!p.has_type() || !p.type().has_tensor_type())
    return true; // sequences and optionals are refused when a node uses them
  const auto &tt = p.type().tensor_type();
  v.dtype = DType(tt.elem_type());
  if (!tt.has_shape())
    return true;
  for (const auto &d : tt.shape().dim()) {
    Dim dim;
    if (d.has_dim_value())
      dim.value = d.dim_value();
    else if (d.has_dim_param())
      dim.symbol = d.dim_param();
    v.shape.push_back(dim);
  }
  return true;
}

bool Loader::graph(const ::onnx::GraphProto &p, std::string &error) {
  std::set<std::string> defined;
  for (const auto &init : p.initializer()) {
    Tensor t;
    if (!tensor(init, t, error))
      return false;
    if (!g_.initializers.emplace(init.name(), std::move(t)).second) {
      error = "initializer '" + init.name() + "' is defined twice";
      return false;
    }
    defined.insert(init.name());
  }
  if (p.sparse_initializer_size() > 0) {
    error = "sparse initializers are not supported ('" + p.sparse_initializer(0).values().name() +
            "')";
    return false;
  }
  for (const auto &in : p.input()) {
    if (g_.initializers.count(in.name()))
      continue; // IR < 4 lists initializers as inputs too
    ValueInfo v;
    if (!valueInfo(in, v, error))
      return false;
    g_.inputs.push_back(v);
    g_.valueInfo[v.name] = v;
    defined.insert(v.name);
  }
  for (const auto &vi : p.value_info()) {
    ValueInfo v;
    if (!valueInfo(vi, v, error))
      return false;
    g_.valueInfo[v.name] = v;
  }
  int index = 0;
  for (const auto &np : p.node()) {
    Node n;
    n.opType = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? n.opType + "_" + std::to_string(index) : np.name();
    ++index;
    for (const std::string &in : np.input()) {
      if (!in.empty() && !defined.count(in)) {
        error = "node '" + n.name + "' (" + n.opType + ") reads '" + in +
                "' before anything defines it (the graph is not in topological order or is "
                "truncated)";
        return false;
      }
      n.inputs.push_back(in);
    }
    for (const std::string &out : np.output()) {
      if (!out.empty() && !defined.insert(out).second) {
        error = "value '" + out + "' is defined twice (node '" + n.name + "')";
        return false;
      }
      n.outputs.push_back(out);
    }
    for (const auto &ap : np.attribute()) {
      Attribute a;
      if (!attribute(ap, a, error)) {
        error = "node '" + n.name + "': " + error;
        return false;
      }
      n.attrs[ap.name()] = std::move(a);
    }
    g_.nodes.push_back(std::move(n));
  }
  for (const auto &out : p.output()) {
    if (!defined.count(out.name())) {
      error = "graph output '" + out.name() + "' is never computed";
      return false;
    }
    ValueInfo v;
    if (!valueInfo(out, v, error))
      return false;
    g_.outputs.push_back(v);
    g_.valueInfo[v.name] = v;
  }
  if (g_.outputs.empty()) {
    error = "the graph has no outputs";
    return false;
  }
  return true;
}

} // namespace

std::unique_ptr<Graph> loadOnnx(const std::string &path, std::string &error) {
  size_t size = 0;
  std::shared_ptr<void> file = mapFile(path, size, error);
  if (!file)
    return nullptr;
  const char *bytes = static_cast<const char *>(file.get());
  size_t first = 0;
  while (first < size && (bytes[first] == ' ' || bytes[first] == '\n' || bytes[first] == '\t' ||
                          bytes[first] == '\r'))
    ++first;

  auto model = std::make_shared<::onnx::ModelProto>();
  if (first < size && bytes[first] == '<') {
    std::string text(bytes, size);
    ::onnx::Common::Status st;
    try {
      st = ::onnx::OnnxParser::Parse(*model, text.c_str());
    } catch (const std::exception &e) {
      // libonnx's parser converts literals with std::stoll / std::stof, which throw on
      // out-of-range values (an opset of 99999999999999999999, value_float = 1e99999)
      error = "'" + path + "' is not valid ONNX text: " + e.what() +
              " (a number out of range?)";
      return nullptr;
    }
    if (!st.IsOK()) {
      // The parser's message spans lines (position, context, problem): one line here.
      std::string msg = st.ErrorMessage();
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' '))
        msg.pop_back();
      for (size_t at = msg.find('\n'); at != std::string::npos; at = msg.find('\n', at))
        msg.replace(at, 1, "; ");
      error = "'" + path + "' is not valid ONNX text: " + msg;
      return nullptr;
    }
  } else if (size > size_t(INT32_MAX)) {
    error = "'" + path + "' is over 2 GiB; store the weights as external data";
    return nullptr;
  } else if (!model->ParseFromArray(bytes, int(size))) {
    error = "'" + path + "' is not an ONNX model (the protobuf does not parse: truncated or "
            "not ONNX)";
    return nullptr;
  }
  if (!model->has_graph() || model->graph().node_size() == 0) {
    error = "'" + path + "' holds no graph (not an ONNX model, or truncated)";
    return nullptr;
  }

  auto g = std::make_unique<Graph>();
  g->keepAlive.push_back(model);
  g->producer = model->producer_name() +
                (model->producer_version().empty() ? "" : " " + model->producer_version());
  for (const auto &kv : model->metadata_props())
    g->metadata[kv.key()] = kv.value();
  for (const auto &os : model->opset_import())
    if (os.domain().empty() || os.domain() == "ai.onnx")
      g->opset = os.version();
  if (g->opset < kMinOpset || g->opset > kMaxOpset) {
    error = "'" + path + "' uses opset " + std::to_string(g->opset) +
            " of the default domain; kiln reads opsets " + std::to_string(kMinOpset) + " to " +
            std::to_string(kMaxOpset) + " (re-export with opset_version in that range)";
    return nullptr;
  }
  Loader loader(path, *g);
  if (!loader.graph(model->graph(), error)) {
    error = "'" + path + "': " + error;
    return nullptr;
  }
  return g;
}

} // namespace kiln::onnx
