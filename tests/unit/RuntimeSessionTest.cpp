// runtime-min executor: sessions on the fake artifact (positions, batching, context
// limit, logits), the sampler, the tokenizer through the artifact, the thread pool, and an
// allocation-failure stress test (also run under ASan, which reports any leak).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <cmath>
#include <map>
#include <memory>

extern "C" {
#include "kiln/backend.h"
#include "kiln/tokenizer.h"
#include "runtime-min/src/exec/pool.h"
}
#include "tests/unit/RuntimeFakeArtifact.h"

using namespace kiln::test;

namespace {

// The fake artifact, opened once per test.
class RuntimeSession : public ::testing::Test {
protected:
  void SetUp() override {
    file_ = std::make_unique<TempFile>(fakeArtifact());
    kiln_error_t err;
    ASSERT_EQ(kiln_artifact_open(file_->path().c_str(), nullptr, &a_, &err), KILN_STATUS_OK)
        << err.message;
    kiln_artifact_info(a_, &info_);
  }
  void TearDown() override { kiln_artifact_close(a_); }

  kiln_session_t *session(uint32_t threads = 1, uint32_t allLogits = 1) {
    kiln_session_options_t o = kiln_session_options_default();
    o.n_threads = threads;
    o.all_logits = allLogits;
    kiln_session_t *s = nullptr;
    kiln_error_t err;
    EXPECT_EQ(kiln_session_create(a_, &o, &s, &err), KILN_STATUS_OK) << err.message;
    return s;
  }

  // The fake model's prediction for a row: argmax must be (token + 1) % vocab.
  int32_t argmaxOf(const float *row) const {
    int32_t best = 0;
    for (uint32_t i = 1; i < info_.vocab_size; ++i)
      if (row[i] > row[best])
        best = int32_t(i);
    return best;
  }

  std::unique_ptr<TempFile> file_;
  kiln_artifact_t *a_ = nullptr;
  kiln_artifact_info_t info_;
};

TEST_F(RuntimeSession, PrefillDecodeAndLogits) {
  for (uint32_t threads : {1u, 3u}) {
    kiln_session_t *s = session(threads);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(kiln_session_logits(s), nullptr);
    std::vector<int32_t> toks;
    for (int i = 0; i < 19; ++i) // 3 batches of <= 8
      toks.push_back(10 + i);
    kiln_error_t err;
    ASSERT_EQ(kiln_session_prefill(s, toks.data(), toks.size(), &err), KILN_STATUS_OK)
        << err.message;
    EXPECT_EQ(kiln_session_n_past(s), 19u);
    uint32_t rows = 0, first = 0;
    const float *all = kiln_session_batch_logits(s, &rows, &first);
    ASSERT_NE(all, nullptr);
    EXPECT_EQ(rows, 3u);
    EXPECT_EQ(first, 16u);
    for (uint32_t r = 0; r < rows; ++r)
      EXPECT_EQ(argmaxOf(all + r * info_.vocab_size), toks[16 + r] + 1);
    EXPECT_EQ(argmaxOf(kiln_session_logits(s)), 29);
    int32_t next = -1;
    ASSERT_EQ(kiln_session_sample(s, &next, &err), KILN_STATUS_OK);
    EXPECT_EQ(next, 29);
    ASSERT_EQ(kiln_session_decode(s, next, &err), KILN_STATUS_OK) << err.message;
    EXPECT_EQ(kiln_session_n_past(s), 20u);
    EXPECT_EQ(argmaxOf(kiln_session_logits(s)), 30);
    kiln_session_stats_t st;
    kiln_session_stats(s, &st);
    EXPECT_EQ(st.prefill_tokens, 19u);
    EXPECT_EQ(st.decode_tokens, 1u);
    EXPECT_EQ(st.weight_bytes_per_token, 12345u);
    EXPECT_EQ(st.n_threads, threads);
    EXPECT_GT(st.ttft_s, 0.0);
    EXPECT_GE(st.peak_memory_bytes, st.session_bytes + info_.file_bytes);
    EXPECT_GE(st.session_bytes, info_.kv_bytes + 8 * info_.vocab_size * sizeof(float));
    kiln_session_destroy(s);
  }
}

// Without options.all_logits the code computes each batch's last row only (the fake model
// leaves the others alone): the session hands out that row and no batch rows.
TEST_F(RuntimeSession, LastRowOnlyWithoutAllLogits) {
  kiln_session_t *s = session(2, 0);
  ASSERT_NE(s, nullptr);
  std::vector<int32_t> toks;
  for (int i = 0; i < 19; ++i)
    toks.push_back(10 + i);
  kiln_error_t err;
  ASSERT_EQ(kiln_session_prefill(s, toks.data(), toks.size(), &err), KILN_STATUS_OK)
      << err.message;
  EXPECT_EQ(argmaxOf(kiln_session_logits(s)), 29);
  uint32_t rows = 7, first = 7;
  EXPECT_EQ(kiln_session_batch_logits(s, &rows, &first), nullptr);
  EXPECT_EQ(rows, 0u);
  ASSERT_EQ(kiln_session_decode(s, 29, &err), KILN_STATUS_OK) << err.message;
  EXPECT_EQ(argmaxOf(kiln_session_logits(s)), 30);
  kiln_session_destroy(s);
}

TEST_F(RuntimeSession, ContextLimitRefusedNoWrap) {
  kiln_session_t *s = session();
  std::vector<int32_t> toks(kFakeMaxCtx - 1, 5);
  kiln_error_t err;
  ASSERT_EQ(kiln_session_prefill(s, toks.data(), toks.size(), &err), KILN_STATUS_OK);
  ASSERT_EQ(kiln_session_decode(s, 7, &err), KILN_STATUS_OK); // position 63: the last
  EXPECT_EQ(kiln_session_decode(s, 7, &err), KILN_STATUS_OUT_OF_RANGE);
  EXPECT_NE(std::string(err.message).find("exceed the context of 64"), std::string::npos)
      << err.message;
  EXPECT_EQ(kiln_session_n_past(s), kFakeMaxCtx); // unchanged
  kiln_session_reset(s);
  EXPECT_EQ(kiln_session_n_past(s), 0u);
  EXPECT_EQ(kiln_session_logits(s), nullptr);
  std::vector<int32_t> tooMany(kFakeMaxCtx + 1, 5);
  EXPECT_EQ(kiln_session_prefill(s, tooMany.data(), tooMany.size(), &err),
            KILN_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(kiln_session_n_past(s), 0u);
  ASSERT_EQ(kiln_session_prefill(s, toks.data(), 4, &err), KILN_STATUS_OK) << err.message;
  kiln_session_destroy(s);
}

TEST_F(RuntimeSession, BadTokensAndArguments) {
  kiln_session_t *s = session();
  kiln_error_t err;
  int32_t bad[] = {1, 2, int32_t(info_.vocab_size)};
  EXPECT_EQ(kiln_session_prefill(s, bad, 3, &err), KILN_STATUS_OUT_OF_RANGE);
  EXPECT_NE(std::string(err.message).find("outside the vocabulary"), std::string::npos);
  EXPECT_EQ(kiln_session_decode(s, -1, &err), KILN_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(kiln_session_n_past(s), 0u);
  int32_t tok;
  EXPECT_EQ(kiln_session_sample(s, &tok, &err), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_session_prefill(s, nullptr, 2, &err), KILN_STATUS_INVALID_ARGUMENT);
  kiln_session_destroy(s);
  kiln_session_options_t o = kiln_session_options_default();
  o.n_threads = 5000;
  EXPECT_EQ(kiln_session_create(a_, &o, &s, &err), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(s, nullptr);
  kiln_allocator_t half = {nullptr, nullptr, nullptr};
  o = kiln_session_options_default();
  o.allocator = &half;
  EXPECT_EQ(kiln_session_create(a_, &o, &s, &err), KILN_STATUS_INVALID_ARGUMENT);
}

// A backend that never opens, as a device without a driver would say (kiln/backend.h).
kiln_status_t npuOpen(const kiln_backend_host_t *, void **, kiln_error_t *err) {
  err->status = KILN_STATUS_UNSUPPORTED;
  snprintf(err->message, sizeof err->message, "npu: no device");
  return err->status;
}
kiln_status_t npuForward(void *, const int32_t *, const int32_t *, int32_t, float *, int,
                         kiln_error_t *) {
  return KILN_STATUS_UNSUPPORTED;
}
void npuClose(void *) {}
const kiln_backend_t kNpu = {"npu", 0, npuOpen, npuForward, nullptr, nullptr, nullptr, npuClose};

// Backends are tried in the order given: the first that opens runs the session, and why the
// ones before it did not is kept; none opening is one error with every reason.
TEST_F(RuntimeSession, BackendsAreTriedInOrder) {
  kiln_error_t err;
  kiln_session_t *s = nullptr;
  kiln_session_options_t o = kiln_session_options_default();
  const kiln_backend_t *npuThenCpu[] = {&kNpu, kiln_cpu_backend()};
  o.backends = npuThenCpu;
  o.n_backends = 2;
  ASSERT_EQ(kiln_session_create(a_, &o, &s, &err), KILN_STATUS_OK) << err.message;
  EXPECT_EQ(kiln_session_backend(s), kiln_cpu_backend());
  EXPECT_STREQ(kiln_session_backend_device(s), "cpu");
  EXPECT_STREQ(kiln_session_backend_passed_over(s), "npu: no device");
  int32_t toks[] = {5, 6};
  ASSERT_EQ(kiln_session_prefill(s, toks, 2, &err), KILN_STATUS_OK) << err.message;
  EXPECT_EQ(argmaxOf(kiln_session_logits(s)), 7); // the CPU code ran
  kiln_session_destroy(s);

  const kiln_backend_t *npuTwice[] = {&kNpu, &kNpu};
  o.backends = npuTwice;
  EXPECT_EQ(kiln_session_create(a_, &o, &s, &err), KILN_STATUS_UNSUPPORTED);
  EXPECT_EQ(s, nullptr);
  EXPECT_STREQ(err.message, "no backend opened: npu: no device; npu: no device");
  o.n_backends = 1; // one backend: its own error, as it is
  EXPECT_EQ(kiln_session_create(a_, &o, &s, &err), KILN_STATUS_UNSUPPORTED);
  EXPECT_STREQ(err.message, "npu: no device");
  o.backend = &kNpu; // both forms at once
  EXPECT_EQ(kiln_session_create(a_, &o, &s, &err), KILN_STATUS_INVALID_ARGUMENT);
  o = kiln_session_options_default();
  o.n_backends = 1; // a count with no list
  EXPECT_EQ(kiln_session_create(a_, &o, &s, &err), KILN_STATUS_INVALID_ARGUMENT);
  const kiln_backend_t *cpuFirst[] = {kiln_cpu_backend(), &kNpu};
  o.backends = cpuFirst;
  o.n_backends = 2;
  ASSERT_EQ(kiln_session_create(a_, &o, &s, &err), KILN_STATUS_OK) << err.message;
  EXPECT_STREQ(kiln_session_backend_passed_over(s), "");
  kiln_session_destroy(s);
}

TEST_F(RuntimeSession, TokenizerRoundTrip) {
  const std::string text = "hello world, héllo\tworld!";
  size_t n = 0;
  kiln_error_t err;
  EXPECT_EQ(kiln_artifact_tokenize(a_, text.data(), text.size(), 1, nullptr, 0, &n, &err),
            KILN_STATUS_BUFFER_TOO_SMALL);
  std::vector<int32_t> ids(n);
  ASSERT_EQ(kiln_artifact_tokenize(a_, text.data(), text.size(), 1, ids.data(), n, &n, &err),
            KILN_STATUS_OK) << err.message;
  EXPECT_EQ(ids[0], 1); // BOS
  std::string back;
  for (int32_t id : ids) {
    char buf[64];
    size_t len = 0;
    ASSERT_EQ(kiln_artifact_detokenize(a_, id, buf, sizeof buf, &len, &err), KILN_STATUS_OK);
    back.append(buf, len);
  }
  EXPECT_EQ(back, " " + text); // the SPM space prefix
  // "▁hello" is one token.
  EXPECT_EQ(kiln_artifact_tokenize(a_, "hello", 5, 0, ids.data(), ids.size(), &n, &err),
            KILN_STATUS_OK);
  ASSERT_EQ(n, 1u);
  char buf[8];
  size_t len;
  EXPECT_EQ(kiln_artifact_detokenize(a_, ids[0], buf, sizeof buf, &len, &err), KILN_STATUS_OK);
  EXPECT_EQ(std::string(buf, len), " hello");
  EXPECT_EQ(kiln_artifact_detokenize(a_, int32_t(info_.vocab_size), buf, 8, &len, &err),
            KILN_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(kiln_artifact_detokenize(a_, ids[0], buf, 2, &len, &err),
            KILN_STATUS_BUFFER_TOO_SMALL);
}

TEST(RuntimeSampler, GreedyLowestIdOnTies) {
  kiln_sampler_t *s = nullptr;
  ASSERT_EQ(kiln_sampler_create(6, nullptr, nullptr, &s, nullptr), KILN_STATUS_OK);
  const float logits[6] = {1, 5, NAN, 5, -INFINITY, 2};
  int32_t tok = -1;
  ASSERT_EQ(kiln_sampler_sample(s, logits, &tok, nullptr), KILN_STATUS_OK);
  EXPECT_EQ(tok, 1);
  kiln_sampler_destroy(s);
}

TEST(RuntimeSampler, TopKTopPAndSeeds) {
  const uint32_t vocab = 100;
  std::vector<float> logits(vocab);
  for (uint32_t i = 0; i < vocab; ++i)
    logits[i] = float(i % 10) * 0.5f; // ids 9, 19, ... share the top logit
  kiln_sampler_params_t p = {1.0f, 3, 1.0f, 42};
  kiln_sampler_t *s = nullptr;
  ASSERT_EQ(kiln_sampler_create(vocab, &p, nullptr, &s, nullptr), KILN_STATUS_OK);
  std::map<int32_t, int> seen;
  std::vector<int32_t> first;
  for (int i = 0; i < 2000; ++i) {
    int32_t t;
    ASSERT_EQ(kiln_sampler_sample(s, logits.data(), &t, nullptr), KILN_STATUS_OK);
    seen[t]++;
    if (i < 50)
      first.push_back(t);
  }
  // top-k 3 keeps the three lowest ids among the tied best: 9, 19, 29.
  EXPECT_EQ(seen.size(), 3u);
  for (int32_t id : {9, 19, 29})
    EXPECT_GT(seen[id], 500) << id;
  // Same seed, same sequence.
  ASSERT_EQ(kiln_sampler_set_params(s, &p, nullptr), KILN_STATUS_OK);
  for (int32_t want : first) {
    int32_t t;
    kiln_sampler_sample(s, logits.data(), &t, nullptr);
    EXPECT_EQ(t, want);
  }
  // top-p: one dominant logit takes all the mass.
  logits[42] = 100.0f;
  p = {0.8f, 0, 0.5f, 7};
  ASSERT_EQ(kiln_sampler_set_params(s, &p, nullptr), KILN_STATUS_OK);
  for (int i = 0; i < 200; ++i) {
    int32_t t;
    kiln_sampler_sample(s, logits.data(), &t, nullptr);
    EXPECT_EQ(t, 42);
  }
  // Temperature: high temperature spreads over all tokens, tiny over the best.
  logits[42] = 4.5f;
  p = {50.0f, 0, 1.0f, 1};
  kiln_sampler_set_params(s, &p, nullptr);
  seen.clear();
  for (int i = 0; i < 5000; ++i) {
    int32_t t;
    kiln_sampler_sample(s, logits.data(), &t, nullptr);
    seen[t]++;
  }
  EXPECT_GT(seen.size(), 90u);
  kiln_error_t err;
  p = {1.0f, -1, 1.0f, 0};
  EXPECT_EQ(kiln_sampler_set_params(s, &p, &err), KILN_STATUS_INVALID_ARGUMENT);
  p = {1.0f, 0, 0.0f, 0};
  EXPECT_EQ(kiln_sampler_set_params(s, &p, &err), KILN_STATUS_INVALID_ARGUMENT);
  p = {NAN, 0, 1.0f, 0};
  EXPECT_EQ(kiln_sampler_set_params(s, &p, &err), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("temperature"), std::string::npos);
  kiln_sampler_destroy(s);
}

TEST(RuntimePool, EveryTaskRunsOnce) {
  struct Malloc {
    static void *alloc(void *, size_t size, size_t alignment) {
      void *p = nullptr;
      return posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size)
                 ? nullptr
                 : p;
    }
    static void release(void *, void *ptr, size_t) { free(ptr); }
  };
  kiln_allocator_t alloc = {Malloc::alloc, Malloc::release, nullptr};
  kiln_error_t err;
  for (uint32_t threads : {1u, 2u, 4u}) {
    kiln_pool_t *pool = nullptr;
    ASSERT_EQ(kiln_pool_create(threads, &alloc, &pool, &err), KILN_STATUS_OK);
    constexpr int kJobs = 1000;
    std::vector<std::atomic<int>> hits(257);
    long wrong = 0;
    for (int job = 0; job < kJobs; ++job) {
      const int32_t n = 1 + job % 257;
      struct Arg {
        std::vector<std::atomic<int>> *hits;
        int32_t n;
        std::atomic<int> bad_n{0};
      } arg{&hits, n};
      kiln_pool_parallel_for(
          pool,
          [](void *p, int32_t task, int32_t n_tasks) {
            auto *a = static_cast<Arg *>(p);
            (*a->hits)[task]++;
            if (n_tasks != a->n)
              a->bad_n++;
          },
          &arg, n);
      // every task of this job exactly once, and nothing else, by the time the call returns
      for (int32_t i = 0; i < 257; ++i)
        wrong += hits[i].exchange(0) != (i < n ? 1 : 0);
      wrong += arg.bad_n.load();
    }
    EXPECT_EQ(wrong, 0);
    kiln_pool_destroy(pool);
  }
}

// A thread held up inside its own share (here: task 0, the caller's first) is helped: the
// other thread takes the rest of that share (tasks 1..7) while it waits. Task 0 waits until
// they have all run elsewhere, or 5 s; a pool that does not steal fails after the 5 s.
TEST(RuntimePool, IdleThreadsTakeAHeldUpThreadsTasks) {
  kiln_allocator_t alloc = {
      [](void *, size_t size, size_t alignment) -> void * {
        void *p = nullptr;
        return posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment,
                              size)
                   ? nullptr
                   : p;
      },
      [](void *, void *ptr, size_t) { free(ptr); }, nullptr};
  kiln_error_t err;
  kiln_pool_t *pool = nullptr;
  ASSERT_EQ(kiln_pool_create(2, &alloc, &pool, &err), KILN_STATUS_OK);
  struct Arg {
    std::atomic<int> during_sleep{0}; // tasks 1..7 run while task 0 waits
    std::atomic<int> sleeping{0};
    std::atomic<int> runs[16];
  } arg;
  for (auto &r : arg.runs)
    r = 0;
  kiln_pool_parallel_for(
      pool,
      [](void *p, int32_t task, int32_t) {
        auto *a = static_cast<Arg *>(p);
        a->runs[task]++;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        if (task == 0) {
          a->sleeping = 1;
          while (a->during_sleep.load() < 7 && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          a->sleeping = 0;
        } else if (task < 8) {
          a->during_sleep += a->sleeping.load();
        } else { // the worker's own share: only once task 0 is under way
          while (!a->sleeping.load() && std::chrono::steady_clock::now() < until)
            std::this_thread::yield();
        }
      },
      &arg, 16);
  for (auto &r : arg.runs)
    EXPECT_EQ(r.load(), 1);
  EXPECT_EQ(arg.during_sleep.load(), 7);
  kiln_pool_destroy(pool);
}

// An allocator that fails the k-th call and tracks what is outstanding.
struct FailingAllocator {
  long calls = 0, failAt = 0;
  long live = 0;
  size_t liveBytes = 0;
  static void *alloc(void *user, size_t size, size_t alignment) {
    auto *f = static_cast<FailingAllocator *>(user);
    if (++f->calls == f->failAt)
      return nullptr;
    void *p = nullptr;
    if (posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size))
      return nullptr;
    f->live++;
    f->liveBytes += size;
    return p;
  }
  static void release(void *user, void *ptr, size_t size) {
    auto *f = static_cast<FailingAllocator *>(user);
    f->live--;
    f->liveBytes -= size;
    free(ptr);
  }
};

// Opens `artifact` and creates a 2-thread session with an allocator that fails its k-th
// call, for k = 1, 2, ... until every allocation succeeds; then runs `use` on the session.
// Each failure must be OUT_OF_MEMORY with a message, and every k leaves nothing allocated.
template <typename Use>
static void everyAllocationFailureIsClean(const std::vector<uint8_t> &artifact, Use use) {
  TempFile file(artifact);
  bool succeeded = false;
  for (long k = 1; k < 400 && !succeeded; ++k) {
    SCOPED_TRACE(k);
    FailingAllocator f;
    f.failAt = k;
    kiln_allocator_t alloc = {FailingAllocator::alloc, FailingAllocator::release, &f};
    kiln_artifact_t *a = nullptr;
    kiln_session_t *s = nullptr;
    kiln_error_t err;
    kiln_status_t st = kiln_artifact_open(file.path().c_str(), &alloc, &a, &err);
    if (st == KILN_STATUS_OK) {
      kiln_session_options_t o = kiln_session_options_default();
      o.allocator = &alloc;
      o.n_threads = 2;
      const size_t before = f.liveBytes;
      st = kiln_session_create(a, &o, &s, &err);
      if (st == KILN_STATUS_OK) {
        use(s, f, f.liveBytes - before);
        succeeded = true;
        EXPECT_EQ(f.calls, k - 1); // every allocation succeeded
        kiln_session_destroy(s);
      } else {
        EXPECT_EQ(s, nullptr);
      }
      kiln_artifact_close(a);
    } else {
      EXPECT_EQ(a, nullptr);
    }
    if (!succeeded) {
      EXPECT_EQ(st, KILN_STATUS_OUT_OF_MEMORY);
      EXPECT_NE(std::string(err.message).find("cannot allocate"), std::string::npos)
          << err.message;
    }
    EXPECT_EQ(f.live, 0) << "leaked allocations";
    EXPECT_EQ(f.liveBytes, 0u);
  }
  EXPECT_TRUE(succeeded);
}

TEST(RuntimeAllocation, EveryAllocationFailureIsClean) {
  everyAllocationFailureIsClean(fakeArtifact(), [](kiln_session_t *s, FailingAllocator &f,
                                                   size_t) {
    kiln_error_t err;
    const int32_t toks[3] = {4, 5, 6};
    EXPECT_EQ(kiln_session_prefill(s, toks, 3, &err), KILN_STATUS_OK);
    const long before = f.calls;
    int32_t t;
    EXPECT_EQ(kiln_session_sample(s, &t, &err), KILN_STATUS_OK);
    EXPECT_EQ(kiln_session_decode(s, t, &err), KILN_STATUS_OK);
    EXPECT_EQ(f.calls, before) << "prefill/decode/sample must not allocate";
  });
}

// The tokenizer's tables and encode's scratch come from the app's allocator too (issue 54):
// opening counts them, tokenizing allocates and frees its scratch there, and a refused
// scratch allocation is a clean OUT_OF_MEMORY that leaves the artifact usable.
TEST(RuntimeAllocation, TokenizerAllocatesThroughTheAllocator) {
  TempFile file(fakeArtifact());
  FailingAllocator f;
  kiln_allocator_t alloc = {FailingAllocator::alloc, FailingAllocator::release, &f};
  kiln_artifact_t *a = nullptr;
  kiln_error_t err;
  ASSERT_EQ(kiln_artifact_open(file.path().c_str(), &alloc, &a, &err), KILN_STATUS_OK)
      << err.message;
  const long opened = f.live;
  const size_t openedBytes = f.liveBytes;
  { // the tokenizer's own tables: the object and its six arrays, gone when it is destroyed
    FailingAllocator g;
    kiln_allocator_t galloc = {FailingAllocator::alloc, FailingAllocator::release, &g};
    const char *texts[3] = {"<unk>", "a", "b"};
    const uint32_t lens[3] = {5, 1, 1};
    kiln_vocab_desc_t d{};
    d.n_tokens = 3, d.texts = texts, d.text_lens = lens;
    d.bos_id = d.eos_id = -1, d.unk_id = 0;
    d.allocator = &galloc;
    kiln_tokenizer_t *t = nullptr;
    ASSERT_EQ(kiln_tokenizer_create(&d, &t), KILN_STATUS_OK);
    EXPECT_EQ(g.live, 7);
    kiln_tokenizer_destroy(t);
    EXPECT_EQ(g.live, 0);
    EXPECT_EQ(g.liveBytes, 0u);
  }
  int32_t ids[64];
  size_t n = 0;
  const long before = f.calls;
  ASSERT_EQ(kiln_artifact_tokenize(a, "hello world", 11, 1, ids, 64, &n, &err), KILN_STATUS_OK)
      << err.message;
  EXPECT_GT(f.calls, before) << "encode's scratch did not come from the allocator";
  EXPECT_EQ(f.live, opened);
  EXPECT_EQ(f.liveBytes, openedBytes);
  for (long k = f.calls + 1; k < f.calls + 8; ++k) { // refuse each scratch allocation once
    f.failAt = k;
    kiln_status_t st = kiln_artifact_tokenize(a, "hello world", 11, 1, ids, 64, &n, &err);
    if (st == KILN_STATUS_OK)
      break;
    EXPECT_EQ(st, KILN_STATUS_OUT_OF_MEMORY);
    EXPECT_EQ(f.live, opened) << "a refused encode leaked";
  }
  f.failAt = 0;
  EXPECT_EQ(kiln_artifact_tokenize(a, "hello world", 11, 1, ids, 64, &n, &err), KILN_STATUS_OK);
  kiln_artifact_close(a);
  EXPECT_EQ(f.live, 0);
  EXPECT_EQ(f.liveBytes, 0u);
}

// A KV cache of a huge page or more is asked for with room to start on one (Linux: 2 MiB):
// every allocation failure along the way is still clean, the session runs, and what it
// frees is exactly what it took (ASan, in the sanitizer build, also sees the pointer).
TEST(RuntimeAllocation, LargeKvCacheRunsAndFreesWhatItTook) {
  kiln::artifact::ArtifactContents c = fakeContents();
  c.memory.kvBytes = (3u << 20) + 64;
  everyAllocationFailureIsClean(
      kiln::artifact::serializeArtifact(c),
      [&](kiln_session_t *s, FailingAllocator &, size_t session_alloc) {
        EXPECT_GE(session_alloc, c.memory.kvBytes);
        kiln_session_stats_t st;
        kiln_session_stats(s, &st);
        EXPECT_EQ(st.session_bytes, session_alloc);
        kiln_error_t err;
        const int32_t toks[3] = {4, 5, 6};
        EXPECT_EQ(kiln_session_prefill(s, toks, 3, &err), KILN_STATUS_OK) << err.message;
        int32_t t;
        EXPECT_EQ(kiln_session_sample(s, &t, &err), KILN_STATUS_OK);
        EXPECT_EQ(t, 7); // the fake model predicts token + 1
      });
}

TEST(RuntimeAllocation, MisalignedAllocatorIsRefused) {
  TempFile file(fakeArtifact());
  struct Bad {
    static void *alloc(void *, size_t size, size_t) {
      char *p = static_cast<char *>(malloc(size + 1));
      return p ? p + 1 : nullptr;
    }
    static void release(void *, void *ptr, size_t) { free(static_cast<char *>(ptr) - 1); }
  };
  kiln_allocator_t alloc = {Bad::alloc, Bad::release, nullptr};
  kiln_artifact_t *a = nullptr;
  kiln_error_t err;
  EXPECT_EQ(kiln_artifact_open(file.path().c_str(), &alloc, &a, &err),
            KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("not aligned"), std::string::npos) << err.message;
}

} // namespace
