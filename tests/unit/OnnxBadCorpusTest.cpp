// Bad-ONNX corpus (issue 6): malformed or unraisable models, each of which the MLIR-free
// importer (loadOnnx -> foldConstants -> raiseGraph -> assembleLlama) must refuse with one
// line naming the problem - never a crash, never a silent fallback. Built twice: against
// kiln_onnx_raise (onnx-bad-corpus) and as a copy of the importer compiled with ASan and
// UBSan (onnx-bad-corpus-asan; protobuf and libonnx stay unsanitised shared libraries).
//
// Fixtures are made at test time, nothing generated is committed: small graphs in ONNX
// text syntax (read by the loader's onnx::OnnxParser) or ModelProto edits, and one real
// torch.onnx export of a tiny Hugging Face-layout Llama (tests/onnx/export_llama.py run by KILN_TORCH_PYTHON),
// which the model-level cases corrupt (truncation, external data, an op swapped, a weight
// or an epsilon made dynamic, quantised weights).

#include "onnx/onnx_pb.h"

#include "compiler/frontends/onnx/OnnxFold.h"
#include "compiler/frontends/onnx/OnnxLoad.h"
#include "compiler/frontends/onnx/OnnxToLlama.h"
#include "compiler/frontends/onnx/raise/Raise.h"
#include "models/weights/WeightStore.h"
#include "models/llama/LlamaConfig.h"

#include <gtest/gtest.h>

#include <limits>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct Outcome {
  bool ok = false;
  std::string stage; // load, fold, raise, assemble, or "" when ok
  std::string error;
  std::map<std::string, int> counts;
  kiln::llama::LlamaConfig config;
};

// The whole MLIR-free import, as `kiln import --emit=mlir` runs it before building IR.
Outcome importModel(const std::string &path) {
  Outcome o;
  std::unique_ptr<kiln::onnx::Graph> g = kiln::onnx::loadOnnx(path, o.error);
  if (!g) {
    o.stage = "load";
    return o;
  }
  if (!kiln::onnx::foldConstants(*g, o.error)) {
    o.stage = "fold";
    return o;
  }
  if (!kiln::onnx::raiseGraph(*g, o.counts, o.error)) {
    o.stage = "raise";
    return o;
  }
  kiln::WeightStore weights;
  if (!kiln::onnx::assembleLlama(*g, o.config, weights, o.error)) {
    o.stage = "assemble";
    return o;
  }
  o.ok = true;
  return o;
}

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void spit(const std::string &path, const std::string &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(f.good()) << "cannot write " << path;
}

void writeModel(const std::string &path, const ::onnx::ModelProto &m) {
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  spit(path, bytes);
}

std::string replaceAll(std::string s, const std::string &from, const std::string &to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in the fixture";
  for (; at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

const char *kHeader = "<\n  ir_version: 8,\n  opset_import: [\"\" : 17]\n>\n";

// 2 query heads of 8 sharing one KV head, rotate-half RoPE with theta 10000, causal mask
// from the sequence length (the lit test tests/lit/frontends/onnx/attention.test).
const char *kAttention = R"(
attention (float[batch_size, sequence_length, 16] x) => (float[batch_size, sequence_length, 16] out)
<float wval = {0.125}, int64[2] q_wshape = {16, 16}, int64[2] kv_wshape = {16, 8},
 float[1, 4] inv_freq = {1.0, 0.1, 0.01, 0.001}, float sqrt_d = {2.8284271},
 float neg = {-1e9}, float fzero = {0.0},
 int64 zero = {0}, int64 one = {1}, int64[1] ax0 = {0}, int64[1] ax1 = {1}, int64[1] ax2 = {2},
 int64[2] ax01 = {0, 1}, int64[1] last = {-1},
 int64[4] q_split = {0, 0, 2, 8}, int64[4] kv_split = {0, 0, 1, 8},
 int64[5] rep = {1, 1, 2, 1, 1}, int64[4] rep_shape = {0, 2, -1, 8}, int64[3] merge = {0, 0, 16},
 int64[1] lo_s = {0}, int64[1] lo_e = {4}, int64[1] hi_s = {4}, int64[1] hi_e = {9223372036854775807}>
{
  # projections (weights folded into constants)
  wq = Expand(wval, q_wshape)
  wk = Expand(wval, kv_wshape)
  wv = Expand(wval, kv_wshape)
  q = MatMul(x, wq)
  k = MatMul(x, wk)
  v = MatMul(x, wv)
  # positions, rotary tables and the causal mask, from the sequence length
  shape = Shape(x)
  seq = Gather(shape, one)
  pos_i = Range(zero, seq, one)
  pos = Cast <to = 1> (pos_i)
  pos_col = Unsqueeze(pos, ax1)
  freqs = MatMul(pos_col, inv_freq)
  emb = Concat <axis = -1> (freqs, freqs)
  cos_t = Cos(emb)
  sin_t = Sin(emb)
  cos = Unsqueeze(cos_t, ax01)
  sin = Unsqueeze(sin_t, ax01)
  rows = Unsqueeze(pos_i, ax1)
  cols = Unsqueeze(pos_i, ax0)
  future = Greater(cols, rows)
  mask = Where(future, neg, fzero)
  # queries: 2 heads, rotary
  q_s = Reshape(q, q_split)
  q_t = Transpose <perm = [0, 2, 1, 3]> (q_s)
  q1 = Slice(q_t, lo_s, lo_e, last)
  q2 = Slice(q_t, hi_s, hi_e, last)
  nq2 = Neg(q2)
  q_rot = Concat <axis = -1> (nq2, q1)
  q_c = Mul(q_t, cos)
  q_r = Mul(q_rot, sin)
  q_rope = Add(q_c, q_r)
  # keys: 1 head, rotary, repeated to 2
  k_s = Reshape(k, kv_split)
  k_t = Transpose <perm = [0, 2, 1, 3]> (k_s)
  k1 = Slice(k_t, lo_s, lo_e, last)
  k2 = Slice(k_t, hi_s, hi_e, last)
  nk2 = Neg(k2)
  k_rot = Concat <axis = -1> (nk2, k1)
  k_c = Mul(k_t, cos)
  k_r = Mul(k_rot, sin)
  k_rope = Add(k_c, k_r)
  k_u = Unsqueeze(k_rope, ax2)
  k_e = Expand(k_u, rep)
  k_rep = Reshape(k_e, rep_shape)
  # values: 1 head, repeated to 2
  v_s = Reshape(v, kv_split)
  v_t = Transpose <perm = [0, 2, 1, 3]> (v_s)
  v_u = Unsqueeze(v_t, ax2)
  v_e = Expand(v_u, rep)
  v_rep = Reshape(v_e, rep_shape)
  # softmax(q k^T / sqrt(d) + mask) v, heads merged
  k_tr = Transpose <perm = [0, 1, 3, 2]> (k_rep)
  scores = MatMul(q_rope, k_tr)
  scaled = Div(scores, sqrt_d)
  masked = Add(scaled, mask)
  probs = Softmax <axis = -1> (masked)
  ctx = MatMul(probs, v_rep)
  ctx_t = Transpose <perm = [0, 2, 1, 3]> (ctx)
  out = Reshape(ctx_t, merge)
}
)";

class OnnxBadCorpus : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/kiln-onnx-corpus-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = new std::string(tmpl);
    // A real export: 1 layer, dim 16, 2 query heads sharing 1 KV head, ffn 24. The vocabulary
    // needs 259 tokens for the byte fallback of the random SentencePiece vocabulary.
    const std::string cmd = std::string(KILN_TORCH_PYTHON) + " " + KILN_EXPORT_LLAMA +
                            " --out " + *dir_ + "/export --no-reference --seed 7 --dim 16"
                            " --layers 1 --heads 2 --kv-heads 1 --ffn 24 --vocab 260"
                            " > " + *dir_ + "/export.log 2>&1";
    exportOk_ = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    if (dir_ && !std::getenv("KILN_KEEP_CORPUS"))
      fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }

  static std::string path(const std::string &name) { return *dir_ + "/" + name; }

  // The exported model; fails the test when the export did not run.
  static std::string exported() {
    const std::string p = path("export/model.onnx");
    if (!exportOk_)
      ADD_FAILURE() << "export_llama.py failed (needs " << KILN_TORCH_PYTHON
                    << " with torch and onnx); log:\n"
                    << slurp(path("export.log"));
    return p;
  }
  static ::onnx::ModelProto exportedProto() {
    ::onnx::ModelProto m;
    EXPECT_TRUE(m.ParseFromString(slurp(exported())));
    return m;
  }

  // Writes `text` (a graph after kHeader, or a whole model when it starts with '<') as
  // NAME.onnxtxt and expects the importer to refuse it.
  static void expectTextError(const std::string &name, const std::string &text,
                              const std::string &needle) {
    const std::string p = path(name + ".onnxtxt");
    spit(p, text[0] == '<' ? text : kHeader + text);
    expectError(name, p, needle);
  }
  static void expectModelError(const std::string &name, const ::onnx::ModelProto &m,
                               const std::string &needle) {
    const std::string p = path(name + ".onnx");
    writeModel(p, m);
    expectError(name, p, needle);
  }
  // One line, containing `needle` (empty: any message), from a failed import.
  static void expectError(const std::string &name, const std::string &p,
                          const std::string &needle) {
    Outcome o = importModel(p);
    EXPECT_FALSE(o.ok) << name << ": imported, expected an error containing '" << needle << "'";
    EXPECT_FALSE(o.error.empty()) << name << ": refused without a message";
    EXPECT_EQ(o.error.find('\n'), std::string::npos) << name << ": not one line:\n" << o.error;
    if (!needle.empty()) {
      EXPECT_NE(o.error.find(needle), std::string::npos)
          << name << ": expected '" << needle << "' in: " << o.error;
    }
    std::cout << "[corpus] " << name << " (" << o.stage << "): " << o.error << "\n";
  }

  static std::string *dir_;
  static bool exportOk_;
};
std::string *OnnxBadCorpus::dir_ = nullptr;
bool OnnxBadCorpus::exportOk_ = false;

::onnx::NodeProto *findNode(::onnx::ModelProto &m, const std::string &opType) {
  for (auto &n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == opType)
      return &n;
  ADD_FAILURE() << "no " << opType << " node in the export";
  return nullptr;
}

::onnx::NodeProto *findNodeNamed(::onnx::ModelProto &m, const std::string &suffix) {
  for (auto &n : *m.mutable_graph()->mutable_node())
    if (n.name().size() >= suffix.size() &&
        n.name().compare(n.name().size() - suffix.size(), suffix.size(), suffix) == 0)
      return &n;
  ADD_FAILURE() << "no node named *" << suffix << " in the export";
  return nullptr;
}

::onnx::TensorProto *findInit(::onnx::ModelProto &m, const std::string &name) {
  for (auto &t : *m.mutable_graph()->mutable_initializer())
    if (t.name() == name)
      return &t;
  ADD_FAILURE() << "no initializer " << name << " in the export";
  return nullptr;
}

// Removes initializer `name` and declares a graph input of its type and shape instead.
void initializerToInput(::onnx::ModelProto &m, const std::string &name) {
  auto *inits = m.mutable_graph()->mutable_initializer();
  for (int i = 0; i < inits->size(); ++i)
    if (inits->Get(i).name() == name) {
      ::onnx::ValueInfoProto *in = m.mutable_graph()->add_input();
      in->set_name(name);
      auto *tt = in->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(inits->Get(i).data_type());
      for (int64_t d : inits->Get(i).dims())
        tt->mutable_shape()->add_dim()->set_dim_value(d);
      inits->DeleteSubrange(i, 1);
      return;
    }
  ADD_FAILURE() << "no initializer " << name;
}

// Moves node `last` (just appended) to the front of the node list.
void moveLastNodeToFront(::onnx::ModelProto &m) {
  auto *nodes = m.mutable_graph()->mutable_node();
  for (int i = nodes->size() - 1; i > 0; --i)
    nodes->SwapElements(i, i - 1);
}

// The q projection's weight: the second input of .../q_proj/MatMul.
const char *kQProj = "q_proj/MatMul";

// ---------------------------------------------------------------------------------------
// Control: the export itself imports, with the expected structure and hyper-parameters.

TEST_F(OnnxBadCorpus, ExportImports) {
  Outcome o = importModel(exported());
  ASSERT_TRUE(o.ok) << o.stage << ": " << o.error;
  EXPECT_EQ(o.counts["attention"], 1);
  EXPECT_EQ(o.counts["rope"], 2);
  EXPECT_EQ(o.counts["rms_norm"], 3);
  EXPECT_EQ(o.counts["swiglu"], 1);
  EXPECT_EQ(o.counts["linear"], 8);
  EXPECT_EQ(o.counts["embedding"], 1);
  EXPECT_EQ(o.counts["residual"], 2);
  EXPECT_EQ(o.config.numLayers, 1u);
  EXPECT_EQ(o.config.dim, 16u);
  EXPECT_EQ(o.config.numHeads, 2u);
  EXPECT_EQ(o.config.numKvHeads, 1u);
  EXPECT_EQ(o.config.ffnDim, 24u);
  EXPECT_EQ(o.config.vocabSize, 260u);
}

// ---------------------------------------------------------------------------------------
// Not ONNX, truncated, unreadable.

TEST_F(OnnxBadCorpus, NotOnnx) {
  spit(path("gguf.onnx"), std::string("GGUF\x03\x00\x00\x00\x00\x00\x00\x00", 12));
  expectError("not-onnx-gguf-magic", path("gguf.onnx"), "not an ONNX model");
  spit(path("text.onnx"), "this is a README, not a model\n");
  expectError("not-onnx-text", path("text.onnx"), "not an ONNX model");
  spit(path("empty.onnx"), "");
  expectError("not-onnx-empty", path("empty.onnx"), "not an ONNX model");
  expectError("missing-file", path("does-not-exist.onnx"), "cannot open");
  expectTextError("bad-text-syntax", std::string(kHeader) + "g (float[4] x) => (float[4] y) { y = Relu(x }",
                  "is not valid ONNX text");
}

// Found by fuzzing the loader (issue 54): each aborted `kiln import` (std::bad_alloc,
// uncaught std::out_of_range) or was undefined behaviour (memcpy of NULL), now one line.
TEST_F(OnnxBadCorpus, FuzzFindings) {
  // A float[2^24, 2^24] initializer with no data: refused before anything is allocated.
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto *g = m.mutable_graph();
  g->set_name("g");
  auto *w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(int64_t(1) << 24);
  w->add_dims(int64_t(1) << 24);
  auto *relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("w");
  relu->add_output("y");
  auto *out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  expectModelError("huge-shape-no-data", m,
                   "initializer 'w' holds 0 values; its shape needs 281474976710656");
  // Out-of-range literals in the text syntax (libonnx's std::stoll / std::stof throw).
  const std::string relu_graph = "g (float[4] x) => (float[4] y) { y = Relu(x) }";
  expectTextError("opset-out-of-range",
                  replaceAll(kHeader, "17", "99999999999999999999") + relu_graph,
                  "is not valid ONNX text: stoll (a number out of range?)");
  expectTextError("float-out-of-range",
                  "g (float[4] x) => (float[4] y) { c = Constant <value_float = 1e99999> () "
                  "y = Mul(x, c) }",
                  "is not valid ONNX text: stof (a number out of range?)");
  // A zero-element typed initializer: nothing to copy (no memcpy of NULL); the graph is
  // then simply not a Llama.
  ::onnx::ModelProto z = m;
  auto *zw = z.mutable_graph()->mutable_initializer(0);
  zw->clear_dims();
  zw->add_dims(0);
  expectModelError("zero-element-initializer", z, "");
  // Found by tests/fuzz (fuzz-onnx): folding a Reshape whose target shape's element count
  // overflows int64, or has a negative entry other than -1, was signed overflow (UBSan
  // aborts this test's ASan/UBSan copy). Now the Reshape is not folded and stays a node.
  for (const char *shape : {"4611686018427387904, 4", "2, -5188146770730811392"})
    expectTextError(std::string("reshape-") + (shape[0] == '2' ? "negative" : "overflow"),
                    std::string("g (float[4] x) => (float[2, 2] y) <float[4] b = {1.0, 1.0, "
                                "1.0, 1.0}, int64[2] s = {") +
                        shape + "}> { r = Reshape(b, s) y = Add(r, x) }",
                    "");
  // Found by fuzz-onnx: a NaN read as an integer (Expand's shape, Gather's index) was a
  // float-to-integer cast out of range, undefined behaviour (UBSan aborts this test's
  // ASan/UBSan copy). Now the node is not folded.
  for (const char *op : {"Expand", "Gather"}) {
    ::onnx::ModelProto n;
    n.set_ir_version(8);
    n.add_opset_import()->set_version(17);
    auto *ng = n.mutable_graph();
    ng->set_name("g");
    auto *b = ng->add_initializer();
    b->set_name("b");
    b->set_data_type(::onnx::TensorProto::FLOAT);
    b->add_dims(4);
    for (int i = 0; i < 4; ++i)
      b->add_float_data(1.0f);
    auto *nan = ng->add_initializer();
    nan->set_name("s");
    nan->set_data_type(::onnx::TensorProto::FLOAT);
    nan->add_dims(1);
    nan->add_float_data(std::numeric_limits<float>::quiet_NaN());
    auto *node = ng->add_node();
    node->set_op_type(op);
    node->add_input("b");
    node->add_input("s");
    node->add_output("r");
    auto *relu = ng->add_node();
    relu->set_op_type("Relu");
    relu->add_input("r");
    relu->add_output("y");
    auto *y = ng->add_output();
    y->set_name("y");
    y->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
    expectModelError(std::string("nan-") + op, n, "");
  }
}

TEST_F(OnnxBadCorpus, TruncatedProtobuf) {
  const std::string bytes = slurp(exported());
  ASSERT_GT(bytes.size(), 1000u);
  for (size_t len : {size_t(1), size_t(7), size_t(64), bytes.size() / 10, bytes.size() / 3,
                     bytes.size() / 2, bytes.size() - 4096, bytes.size() - 100, bytes.size() - 1}) {
    const std::string name = "truncated-" + std::to_string(len);
    spit(path(name + ".onnx"), bytes.substr(0, len));
    expectError(name, path(name + ".onnx"), "");
  }
}

TEST_F(OnnxBadCorpus, Opsets) {
  const std::string graph = "g (float[batch_size, 4] x) => (float[batch_size, 4] y) { y = Relu(x) }";
  expectTextError("opset-12", replaceAll(kHeader, "17", "12") + graph,
                  "uses opset 12 of the default domain; kiln reads opsets 13 to 21");
  expectTextError("opset-22", replaceAll(kHeader, "17", "22") + graph,
                  "uses opset 22 of the default domain; kiln reads opsets 13 to 21");
}

// ---------------------------------------------------------------------------------------
// Structurally broken graphs.

TEST_F(OnnxBadCorpus, BrokenGraphs) {
  expectTextError("output-never-computed",
                  "g (float[batch_size, 4] x) => (float[batch_size, 4] y, float[batch_size, 4] z)\n"
                  "{ y = Relu(x) }",
                  "graph output 'z' is never computed");
  expectTextError("undefined-input",
                  "g (float[batch_size, 4] x) => (float[batch_size, 4] y) { y = Add(x, ghost) }",
                  "reads 'ghost' before anything defines it");
  expectTextError("defined-twice",
                  "g (float[batch_size, 4] x) => (float[batch_size, 4] y)\n"
                  "{ y = Relu(x)\n  y = Sigmoid(x) }",
                  "value 'y' is defined twice");
  expectTextError("no-nodes", "g (float[batch_size, 4] x) => (float[batch_size, 4] x) { }",
                  "holds no graph");
  expectTextError("unbindable-dim",
                  "g (float[batch_size, width] x) => (float[batch_size, width] y) { y = Relu(x) }",
                  "dimension 'width' kiln cannot relate to the batch, sequence or past length");

  ::onnx::ModelProto m = exportedProto();
  ::onnx::TensorProto *w = findInit(m, findNodeNamed(m, kQProj)->input(1));
  w->set_dims(0, w->dims(0) + 1);
  expectModelError("raw-data-size", m, "bytes of raw data; its shape needs");

  m = exportedProto();
  ::onnx::TensorProto *s = m.mutable_graph()->add_initializer();
  s->set_name("strings");
  s->set_data_type(::onnx::TensorProto::STRING);
  s->add_string_data("x");
  expectModelError("string-initializer", m, "has element type 8, which kiln does not read");
}

// ---------------------------------------------------------------------------------------
// External data (the layout big models use): missing, short, escaping the directory.

TEST_F(OnnxBadCorpus, ExternalData) {
  // Every initializer of the export moved into weights.bin, as torch.onnx writes it.
  ::onnx::ModelProto m = exportedProto();
  std::string blob;
  for (auto &t : *m.mutable_graph()->mutable_initializer()) {
    const std::string raw = t.raw_data();
    ASSERT_FALSE(raw.empty()) << t.name();
    t.clear_raw_data();
    t.set_data_location(::onnx::TensorProto::EXTERNAL);
    auto add = [&](const char *k, const std::string &v) {
      auto *e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", "weights.bin");
    add("offset", std::to_string(blob.size()));
    add("length", std::to_string(raw.size()));
    blob += raw;
    blob.resize((blob.size() + 63) / 64 * 64, '\0');
  }
  fs::create_directories(path("ext"));
  writeModel(path("ext/model.onnx"), m);
  spit(path("ext/weights.bin"), blob);
  Outcome ok = importModel(path("ext/model.onnx"));
  ASSERT_TRUE(ok.ok) << "control: " << ok.error;

  fs::create_directories(path("ext-missing"));
  writeModel(path("ext-missing/model.onnx"), m);
  expectError("external-data-missing", path("ext-missing/model.onnx"),
              "external data file missing: cannot open");

  fs::create_directories(path("ext-short"));
  writeModel(path("ext-short/model.onnx"), m);
  spit(path("ext-short/weights.bin"), blob.substr(0, blob.size() / 2));
  expectError("external-data-short", path("ext-short/model.onnx"), "which holds");

  auto relocate = [&](const std::string &name, const std::string &location) {
    ::onnx::ModelProto r = m;
    for (auto &t : *r.mutable_graph()->mutable_initializer())
      for (auto &e : *t.mutable_external_data())
        if (e.key() == "location")
          e.set_value(location);
    fs::create_directories(path(name));
    writeModel(path(name + "/model.onnx"), r);
    spit(path(name + "/weights.bin"), blob);
    expectError(name, path(name + "/model.onnx"), "must name a file beside the model");
  };
  relocate("external-data-dotdot", "../ext/weights.bin");
  relocate("external-data-absolute", path("ext/weights.bin"));

  // Offsets need not be aligned (the importer reads through memcpy): every tensor one byte
  // further into the file still imports, under UBSan too.
  ::onnx::ModelProto shifted = m;
  for (auto &t : *shifted.mutable_graph()->mutable_initializer())
    for (auto &e : *t.mutable_external_data())
      if (e.key() == "offset")
        e.set_value(std::to_string(std::stoull(e.value()) + 1));
  fs::create_directories(path("ext-unaligned"));
  writeModel(path("ext-unaligned/model.onnx"), shifted);
  spit(path("ext-unaligned/weights.bin"), std::string(1, '\0') + blob);
  Outcome unaligned = importModel(path("ext-unaligned/model.onnx"));
  EXPECT_TRUE(unaligned.ok) << "unaligned offsets: " << unaligned.error;

  ::onnx::ModelProto bad = m;
  for (auto &e : *bad.mutable_graph()->mutable_initializer(0)->mutable_external_data())
    if (e.key() == "offset")
      e.set_value("12abc");
  fs::create_directories(path("ext-offset"));
  writeModel(path("ext-offset/model.onnx"), bad);
  spit(path("ext-offset/weights.bin"), blob);
  expectError("external-data-bad-offset", path("ext-offset/model.onnx"), "is not a number");
}

// ---------------------------------------------------------------------------------------
// Unraisable structures in the real export.

TEST_F(OnnxBadCorpus, UnknownOps) {
  // Erf (a real ONNX op kiln's interpreter does not know) in place of the SwiGLU sigmoid.
  ::onnx::ModelProto m = exportedProto();
  findNode(m, "Sigmoid")->set_op_type("Erf");
  expectModelError("unknown-op-erf", m, "Erf");

  // A custom-domain op.
  m = exportedProto();
  ::onnx::NodeProto *n = findNode(m, "Sigmoid");
  n->set_op_type("FastGelu");
  n->set_domain("com.example");
  auto *os = m.add_opset_import();
  os->set_domain("com.example");
  os->set_version(1);
  expectModelError("custom-domain-op", m, "FastGelu");

  // Tanh: an op the interpreter evaluates but no pattern raises; the node is named.
  m = exportedProto();
  findNode(m, "Sigmoid")->set_op_type("Tanh");
  expectModelError("unraised-tanh", m, "Tanh node '/lm/model/layers.0/mlp/act_fn/Sigmoid' could not be raised");
}

TEST_F(OnnxBadCorpus, DynamicWeight) {
  // The down projection's weight a graph input: that MatMul is named.
  ::onnx::ModelProto m = exportedProto();
  initializerToInput(m, findNodeNamed(m, "down_proj/MatMul")->input(1));
  expectModelError("dynamic-weight", m,
                   "MatMul node '/lm/model/layers.0/mlp/down_proj/MatMul' could not be raised");

  // The q projection's weight a graph input: RoPE needs a Linear under the head split, so
  // the error surfaces at the attention (which does not name the MatMul).
  m = exportedProto();
  initializerToInput(m, findNodeNamed(m, kQProj)->input(1));
  expectModelError("dynamic-weight-q", m, "the query is not rotary-embedded heads");
}

TEST_F(OnnxBadCorpus, MissingEpsilon) {
  // The first norm's epsilon read from a graph input instead of a constant.
  ::onnx::ModelProto m = exportedProto();
  ::onnx::NodeProto *add = findNodeNamed(m, "input_layernorm/Add");
  add->set_input(1, "epsilon");
  ::onnx::ValueInfoProto *in = m.mutable_graph()->add_input();
  in->set_name("epsilon");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape();
  expectModelError("missing-epsilon", m, "the RMSNorm epsilon is not a positive constant");

  // Two norms with different epsilons: LlamaConfig has one.
  m = exportedProto();
  ::onnx::NodeProto *c = findNodeNamed(m, "post_attention_layernorm/Constant_1");
  ASSERT_EQ(c->op_type(), "Constant");
  ::onnx::TensorProto *t = c->mutable_attribute(0)->mutable_t();
  const float eps = 1e-6f;
  t->set_raw_data(std::string(reinterpret_cast<const char *>(&eps), 4));
  expectModelError("epsilon-differs", m, "differs from another norm's");
}

TEST_F(OnnxBadCorpus, ExtraOutput) {
  ::onnx::ModelProto m = exportedProto();
  ::onnx::ValueInfoProto *o = m.mutable_graph()->add_output();
  o->set_name(findNodeNamed(m, "layers.0/Add")->output(0));
  expectModelError("extra-output", m, "is neither the logits");
}

// Weight-only quantised ONNX: DequantizeLinear of int8/uint8 weights is folded (supported);
// other forms are refused with one line.
::onnx::ModelProto dequantizedQProj(const ::onnx::ModelProto &exported, int32_t dtype,
                                    size_t elementSize, bool blocked) {
  ::onnx::ModelProto m = exported;
  ::onnx::NodeProto *mm = findNodeNamed(m, kQProj);
  ::onnx::TensorProto *w = findInit(m, mm->input(1));
  ::onnx::TensorProto q;
  q.set_name("q_proj_quantised");
  q.set_data_type(dtype);
  *q.mutable_dims() = w->dims();
  q.set_raw_data(std::string(w->raw_data().size() / 4 * elementSize, '\x01'));
  *m.mutable_graph()->add_initializer() = q;
  ::onnx::TensorProto *scale = m.mutable_graph()->add_initializer();
  scale->set_name("q_proj_scale");
  scale->set_data_type(::onnx::TensorProto::FLOAT);
  scale->add_float_data(0.01f);
  mm->set_input(1, "q_proj_dq");
  ::onnx::NodeProto *dq = m.mutable_graph()->add_node();
  dq->set_op_type("DequantizeLinear");
  dq->set_name("q_proj_dequantize");
  dq->add_input("q_proj_quantised");
  dq->add_input("q_proj_scale");
  dq->add_output("q_proj_dq");
  if (blocked) {
    ::onnx::AttributeProto *a = dq->add_attribute();
    a->set_name("block_size");
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(8);
  }
  moveLastNodeToFront(m);
  return m;
}

TEST_F(OnnxBadCorpus, QuantisedWeights) {
  // DequantizeLinear(int8 weight, scale) -> MatMul, as onnxruntime's quantize_dynamic
  // writes weight-only int8: folded, imports.
  const ::onnx::ModelProto exported = exportedProto();
  writeModel(path("dequantize-int8.onnx"),
             dequantizedQProj(exported, ::onnx::TensorProto::INT8, 1, false));
  Outcome ok = importModel(path("dequantize-int8.onnx"));
  EXPECT_TRUE(ok.ok) << ok.stage << ": " << ok.error;
  EXPECT_EQ(ok.counts["linear"], 8);

  expectModelError("dequantize-int32",
                   dequantizedQProj(exported, ::onnx::TensorProto::INT32, 4, false),
                   "dequantising int32 weights is not supported (int8 and uint8 are)");
  expectModelError("dequantize-blocked",
                   dequantizedQProj(exported, ::onnx::TensorProto::INT8, 1, true),
                   "blocked DequantizeLinear (block_size) is not supported");

  ::onnx::ModelProto m;
  ::onnx::NodeProto *mm;
  ::onnx::TensorProto *w;
  // onnxruntime's com.microsoft MatMulNBits (4-bit blocks of 16 along K).
  m = exported;
  mm = findNodeNamed(m, kQProj);
  w = findInit(m, mm->input(1));
  const int64_t k = w->dims(0), nOut = w->dims(1), blocks = k / 16;
  ::onnx::TensorProto *b = m.mutable_graph()->add_initializer();
  b->set_name("q_proj_nbits");
  b->set_data_type(::onnx::TensorProto::UINT8);
  for (int64_t d : {nOut, blocks, int64_t(8)})
    b->add_dims(d);
  b->set_raw_data(std::string(size_t(nOut * blocks * 8), '\x11'));
  ::onnx::TensorProto *sc = m.mutable_graph()->add_initializer();
  sc->set_name("q_proj_nbits_scales");
  sc->set_data_type(::onnx::TensorProto::FLOAT);
  sc->add_dims(nOut * blocks);
  for (int64_t i = 0; i < nOut * blocks; ++i)
    sc->add_float_data(0.01f);
  mm->set_op_type("MatMulNBits");
  mm->set_domain("com.microsoft");
  mm->set_input(1, "q_proj_nbits");
  mm->add_input("q_proj_nbits_scales");
  for (auto [key, v] : {std::pair<const char *, int64_t>{"K", k}, {"N", nOut}, {"bits", 4},
                        {"block_size", 16}}) {
    ::onnx::AttributeProto *a = mm->add_attribute();
    a->set_name(key);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  auto *os = m.add_opset_import();
  os->set_domain("com.microsoft");
  os->set_version(1);
  expectModelError("matmul-nbits", m, "MatMulNBits");
}

// ---------------------------------------------------------------------------------------
// Recognised structures that fail a check (small graphs).

TEST_F(OnnxBadCorpus, GemmWithBias) {
  expectTextError("gemm-bias",
                  "linear (float[sequence_length, 4] x) => (float[sequence_length, 2] y)\n"
                  "<float[2, 4] w = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, float[2] b = {1.0, -1.0}>\n"
                  "{ y = Gemm <transB = 1> (x, w, b) }",
                  "has a bias; Llama linear layers have none");
}

TEST_F(OnnxBadCorpus, MismatchedHeads) {
  // The value split into 2 heads and not repeated, while the key has 1.
  std::string g = kAttention;
  g = replaceAll(g, "wv = Expand(wval, kv_wshape)", "wv = Expand(wval, q_wshape)");
  g = replaceAll(g, "v_s = Reshape(v, kv_split)", "v_s = Reshape(v, q_split)");
  g = replaceAll(g, "ctx = MatMul(probs, v_rep)", "ctx = MatMul(probs, v_t)");
  expectTextError("mismatched-heads", g, "head counts or sizes do not match (q 2x8, k 1, v 2x8)");
}

TEST_F(OnnxBadCorpus, AttentionChecks) {
  // The control: the small attention graph raises (assembly then wants a whole model).
  expectTextError("attention-alone", kAttention, "expected the classifier (Linear)");
  expectTextError("attention-scale", replaceAll(kAttention, "sqrt_d = {2.8284271}", "sqrt_d = {8.0}"),
                  "the score scale 0.125000 is not 1/sqrt(8)");
  expectTextError("attention-not-causal",
                  replaceAll(kAttention, "future = Greater(cols, rows)", "future = Less(cols, rows)"),
                  "the mask added to the scores is not causal");
  expectTextError("rope-faster",
                  replaceAll(kAttention, "inv_freq = {1.0, 0.1, 0.01, 0.001}",
                             "inv_freq = {1.0, 0.1, 0.02, 0.001}"),
                  "rotary frequency 2 is 0.020000, not theta^(-2i/d) = 0.010000 or a fraction "
                  "of it (scaled RoPE)");
}

} // namespace
