#include "transport/rpc/rpc_server.hpp"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/async.h>
#include <sys/resource.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "core/call_origin.hpp"
#include "core/log.hpp"
#include "core/thread_pool.hpp"
#include "transport/rpc/codec.hpp"
#include "transport/rpc/door_loop.hpp"
#include "transport/rpc/endpoint.hpp"
#include "transport/rpc/request_checks.hpp"
#include "transport/net/listen_socket.hpp"
#include "transport/rpc/answer_mailbox.hpp"
#include "transport/rpc/coalescing_stream.hpp"
#include "transport/rpc/rpc_acceptor.hpp"

namespace spindle::transport::rpc {
namespace {

using detail::str;
using detail::text;

// Admin.listModels and Inference.models: what each served model takes.
void fill_models(::capnp::List<::ModelInfo>::Builder out, const std::vector<model_info>& models) {
  for (unsigned i = 0; i < models.size(); ++i) {
    out[i].setName(text(models[i].name));
    out[i].setKind(text(models[i].kind));
    out[i].setArch(text(models[i].arch));
    out[i].setInputWidth(models[i].input_width);
    out[i].setOutputWidth(models[i].output_width);
    if (models[i].kind == "gnn") out[i].setTask(text(models[i].task));
    auto types = out[i].initNodeTypes(unsigned(models[i].node_types.size()));
    for (unsigned t = 0; t < types.size(); ++t) types.set(t, text(models[i].node_types[t]));
    auto rows = out[i].initTableRows(unsigned(models[i].table_rows.size()));
    for (unsigned t = 0; t < rows.size(); ++t) rows.set(t, models[i].table_rows[t]);
  }
}

// Whether this event-loop thread has a turn of its service open (open_turn).
thread_local bool turn_open = false;

void close_turn(rpc_service& s) {
  if (!turn_open) return;
  turn_open = false;
  s.end_turn();
}

template <class T>
struct reply_state {
  std::thread::id owner = std::this_thread::get_id();  // the event-loop thread
  bool in_call = true;                                 // read and written by the owner only
  std::optional<T> now;                                // read and written by the owner only
  std::function<void(T)> later;                        // any thread, once
};

// Runs `call(done)` and returns the answer's promise on this (event-loop)
// thread. `done` may be called once from any thread; when it is called during
// `call` on this thread (refusals: overloaded, bad request, unknown model) the
// answer is returned at once, without a wake-up of the loop, so that refusing
// stays cheap when the server is overloaded. Later answers come through `box`
// (many for one wake-up of the loop).
template <class T, class Call>
kj::Promise<T> answer_of(answer_mailbox<T>& box, Call&& call) {
  auto st = std::make_shared<reply_state<T>>();
  auto e = box.expect();
  st->later = kj::mv(e.post);
  call([st](T v) {
    if (std::this_thread::get_id() == st->owner && st->in_call) {
      st->now = std::move(v);
    } else {
      st->later(std::move(v));
    }
  });
  st->in_call = false;
  if (!st->now) return kj::mv(e.promise);
  box.forget(e.id);
  return kj::mv(*st->now);
}

// A promise on this thread and a callback any thread may call once.
template <class T>
std::pair<kj::Promise<T>, std::function<void(T)>> cross_thread_reply() {
  auto paf = kj::newPromiseAndCrossThreadFulfiller<T>();
  auto f = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<T>>>(kj::mv(paf.fulfiller));
  return {kj::mv(paf.promise), [f](T v) { (*f)->fulfill(kj::mv(v)); }};
}

class inference_impl final : public ::Inference::Server {
 public:
  explicit inference_impl(rpc_service& s) : s_(s) {}

  kj::Promise<void> version(VersionContext ctx) override {
    ctx.getResults().setVersion(::SCHEMA_VERSION);
    ctx.getResults().setReady(s_.ready());
    return kj::READY_NOW;
  }

  kj::Promise<void> models(ModelsContext ctx) override {
    const auto models = s_.models();
    fill_models(ctx.getResults().initModels(unsigned(models.size())), models);
    return kj::READY_NOW;
  }

  kj::Promise<void> inferGnn(InferGnnContext ctx) override {
    return gnn(detail::read(ctx.getParams().getRequest())).then([ctx](gnn_answer a) mutable {
      detail::write(ctx.getResults(detail::size_of(a)).initReply(), a);
    });
  }

  kj::Promise<void> inferGnnBatch(InferGnnBatchContext ctx) override {
    auto requests = ctx.getParams().getRequests();
    if (auto why = batch_too_large(requests); !why.empty()) {
      detail::write(ctx.getResults().initReplies(1)[0], {rpc_status::bad_request, why});
      return kj::READY_NOW;
    }
    auto promises = kj::heapArrayBuilder<kj::Promise<gnn_answer>>(requests.size());
    for (auto r : requests) promises.add(gnn(detail::read(r)));
    return kj::joinPromises(promises.finish()).then([ctx](kj::Array<gnn_answer> answers) mutable {
      auto out = ctx.getResults().initReplies(answers.size());
      for (unsigned i = 0; i < answers.size(); ++i) detail::write(out[i], answers[i]);
    });
  }

  kj::Promise<void> inferRec(InferRecContext ctx) override {
    auto promise = answer_of<rec_answer>(rec_box_, [&](auto done) {
      s_.infer_rec(detail::read(ctx.getParams().getRequest()), done);
    });
    return promise.then(
        [ctx](rec_answer a) mutable {
          detail::write(ctx.getResults(detail::size_of(a)).initReply(), a);
        });
  }

  kj::Promise<void> inferTensor(InferTensorContext ctx) override {
    auto p = ctx.getParams();
    auto payload = p.getPayload();
    auto promise = answer_of<tensor_answer>(tensor_box_, [&](auto done) {
      s_.infer_tensor(str(p.getModel()),
                      {reinterpret_cast<const std::byte*>(payload.begin()), payload.size()},
                      p.getDeadlineUs(), done);
    });
    return promise.then(
        [ctx](tensor_answer a) mutable { detail::write(ctx.getResults().initReply(), a); });
  }

  kj::Promise<void> openSplit(OpenSplitContext ctx) override {
    auto s = s_.open_split();
    if (!s) return KJ_EXCEPTION(FAILED, s.error().to_string());
    auto out = ctx.getResults().initSession();
    out.setWorkerAddress(kj::arrayPtr(s->worker_address.data(), s->worker_address.size()));
    auto names = out.initModels(s->models.size());
    for (unsigned i = 0; i < s->models.size(); ++i) names.set(i, text(s->models[i]));
    out.setMaxPayload(s->max_payload);
    return kj::READY_NOW;
  }

  kj::Promise<void> inferSplit(InferSplitContext ctx) override {
    auto p = ctx.getParams();
    auto promise = answer_of<tensor_answer>(tensor_box_, [&](auto done) {
      s_.infer_split(str(p.getModel()), p.getCallId(), p.getBytes(), p.getDeadlineUs(), done);
    });
    return promise.then(
        [ctx](tensor_answer a) mutable { detail::write(ctx.getResults().initReply(), a); });
  }

 private:
  // Refused before any work or allocation: the reply's size follows the seeds.
  static std::string batch_too_large(capnp::List<::GnnRequest>::Reader requests) {
    if (requests.size() > kMaxBatchRequests) return check_gnn_batch(requests.size(), 0);
    std::size_t seeds = 0;
    for (auto r : requests) seeds += r.getSeeds().size() + r.getSeedIds().size();
    return check_gnn_batch(requests.size(), seeds);
  }

  // The first GNN call of a pass of the event loop opens a turn of the service
  // (rpc_service::begin_turn); it ends once the loop has run everything else it
  // holds, just before it waits for I/O (kj::evalLast), so the calls read in one
  // pass are handed on together.
  void open_turn() {
    if (turn_open) return;
    turn_open = true;
    s_.begin_turn();
    kj::evalLast([&s = s_] { close_turn(s); }).detach([&s = s_](kj::Exception&&) { close_turn(s); });
  }

  kj::Promise<gnn_answer> gnn(gnn_call call) {
    open_turn();
    return answer_of<gnn_answer>(gnn_box_,
                                 [&](auto done) { s_.infer_gnn(std::move(call), done); });
  }

  rpc_service& s_;
  answer_mailbox<gnn_answer> gnn_box_;  // created and destroyed on the event-loop thread
  answer_mailbox<rec_answer> rec_box_;
  answer_mailbox<tensor_answer> tensor_box_;
};

class admin_impl final : public ::Admin::Server {
 public:
  admin_impl(rpc_service& s, std::string token, thread_pool& worker, thread_pool& graph_writer)
      : s_(s), token_(std::move(token)), worker_(worker), graph_writer_(graph_writer) {}

  kj::Promise<void> version(VersionContext ctx) override {
    ctx.getResults().setVersion(::SCHEMA_VERSION);
    ctx.getResults().setReady(s_.ready());
    return kj::READY_NOW;
  }

  kj::Promise<void> stats(StatsContext ctx) override {
    if (refuse(ctx.getParams().getToken(), ctx.getResults())) return kj::READY_NOW;
    ctx.getResults().setJson(text(s_.stats_json()));
    return kj::READY_NOW;
  }

  kj::Promise<void> listModels(ListModelsContext ctx) override {
    if (refuse(ctx.getParams().getToken(), ctx.getResults())) return kj::READY_NOW;
    const auto models = s_.models();
    fill_models(ctx.getResults().initModels(unsigned(models.size())), models);
    return kj::READY_NOW;
  }

  kj::Promise<void> getTunables(GetTunablesContext ctx) override {
    auto results = ctx.getResults();
    if (refuse(ctx.getParams().getToken(), results)) return kj::READY_NOW;
    auto t = s_.tunables(str(ctx.getParams().getModel()));
    if (!t) return answer(results, t.error());
    auto out = results.initTunables(t->size());
    for (unsigned i = 0; i < t->size(); ++i) {
      out[i].setName(text((*t)[i].name));
      out[i].setValue(text((*t)[i].value));
    }
    return kj::READY_NOW;
  }

  kj::Promise<void> setTunable(SetTunableContext ctx) override {
    auto p = ctx.getParams();
    if (refuse(p.getToken(), ctx.getResults())) return kj::READY_NOW;
    return answer(ctx.getResults(),
                  s_.set_tunable(str(p.getModel()), str(p.getName()), str(p.getValue())));
  }

  kj::Promise<void> members(MembersContext ctx) override {
    if (refuse(ctx.getParams().getToken(), ctx.getResults())) return kj::READY_NOW;
    ctx.getResults().setJson(text(s_.members_json()));
    return kj::READY_NOW;
  }

  // Loading reads and copies a model and unloading waits for its calls: both
  // run on the admin worker, so inference on this thread never waits for them.
  kj::Promise<void> loadModel(LoadModelContext ctx) override {
    auto p = ctx.getParams();
    if (refuse(p.getToken(), ctx.getResults())) return kj::READY_NOW;
    return off_thread(ctx, [this, name = str(p.getName()), path = str(p.getPath())] {
      return s_.load_model(name, path);
    });
  }

  kj::Promise<void> unloadModel(UnloadModelContext ctx) override {
    auto p = ctx.getParams();
    if (refuse(p.getToken(), ctx.getResults())) return kj::READY_NOW;
    return off_thread(ctx, [this, name = str(p.getName())] { return s_.unload_model(name); });
  }

  // A batch is durable before it is answered (an fsync): it runs on the graph
  // writer thread, one batch at a time, never on the event loop.
  kj::Promise<void> updateGraph(UpdateGraphContext ctx) override {
    auto p = ctx.getParams();
    if (refuse(p.getToken(), ctx.getResults())) return kj::READY_NOW;
    auto [promise, done] = cross_thread_reply<graph_edit_answer>();
    graph_writer_.submit([this, edit = detail::read(p.getUpdate()), done = std::move(done)]() mutable {
      scoped_call_origin origin("capnp");
      done(s_.update_graph(std::move(edit)));
    });
    return promise.then([ctx](graph_edit_answer a) mutable { write_graph(ctx.getResults(), a); });
  }

  kj::Promise<void> graphVersion(GraphVersionContext ctx) override {
    if (refuse(ctx.getParams().getToken(), ctx.getResults())) return kj::READY_NOW;
    write_graph(ctx.getResults(), s_.graph_version());
    return kj::READY_NOW;
  }

 private:
  template <class Context>
  kj::Promise<void> off_thread(Context ctx, std::function<status()> work) {
    auto [promise, done] = cross_thread_reply<status>();
    worker_.submit([work = std::move(work), done = std::move(done)] {
      scoped_call_origin origin("capnp");
      done(work());
    });
    return promise.then([this, ctx](status s) mutable { return answer(ctx.getResults(), s); });
  }

  template <class Results>
  static void write_graph(Results r, const graph_edit_answer& a) {
    r.setStatus(detail::to_wire(a.status));
    r.setMessage(text(a.message));
    r.setVersion(a.version);
    r.setNodes(a.nodes);
    if constexpr (requires { r.initNewIds(0u); }) {
      auto ids = r.initNewIds(unsigned(a.new_ids.size()));
      for (unsigned i = 0; i < a.new_ids.size(); ++i) ids.set(i, a.new_ids[i]);
    }
  }

  template <class Results>
  bool refuse(::capnp::Text::Reader token, Results r) {
    if (token_matches({token.cStr(), token.size()}, token_)) return false;
    r.setStatus(::Status::UNAUTHORIZED);
    r.setMessage(token_.empty() ? "admin is disabled: the server has no admin token configured"
                                : "wrong admin token");
    return true;
  }

  template <class Results>
  kj::Promise<void> answer(Results r, const status& s) {
    if (!s) {
      r.setStatus(s.code() == errc::invalid_argument || s.code() == errc::not_found ||
                          s.code() == errc::unsupported || s.code() == errc::corrupt_data ||
                          s.code() == errc::io_error
                      ? ::Status::BAD_REQUEST
                  : s.code() == errc::unavailable ? ::Status::UNAVAILABLE
                                                  : ::Status::INTERNAL);
      r.setMessage(text(s.message()));
    }
    return kj::READY_NOW;
  }

  rpc_service& s_;
  std::string token_;
  thread_pool& worker_;  // "rpc-admin": model loads and unloads, one at a time
  thread_pool& graph_writer_;  // "rpc-graph": graph update batches, one at a time
};

class root_impl final : public ::Spindle::Server {
 public:
  root_impl(rpc_service& s, const std::string& token, thread_pool& admin_worker,
            thread_pool& graph_writer)
      : inference_(kj::heap<inference_impl>(s)),
        admin_(kj::heap<admin_impl>(s, token, admin_worker, graph_writer)) {}
  kj::Promise<void> inference(InferenceContext ctx) override {
    ctx.getResults().setInference(inference_);
    return kj::READY_NOW;
  }
  kj::Promise<void> admin(AdminContext ctx) override {
    ctx.getResults().setAdmin(admin_);
    return kj::READY_NOW;
  }

 private:
  ::Inference::Client inference_;
  ::Admin::Client admin_;
};

}  // namespace

struct rpc_server::impl {
  thread_pool admin_worker{1, "rpc-admin"};  // Admin calls that may take long (model loads)
  thread_pool graph_writer{1, "rpc-graph"};  // graph update batches (durable before answered)
  std::thread thread;  // "rpc-server": owns the event loop and every Cap'n Proto object
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;                                   // guarded by mu
  int port = 0;                                         // guarded by mu
  std::string error;                                    // guarded by mu
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop;  // guarded by mu

  void run(server_options o, rpc_service& service) {
    try {
      const auto where = parse_host_port(o.listen, "--listen");  // checked by start()
      const std::string host = where->host;
      const unsigned port_wanted = where->port;
      capnp::ReaderOptions limits;
      limits.traversalLimitInWords = o.max_message_bytes / 8;
      limits.nestingLimit = 32;
      auto io = kj::setupAsyncIo();
      auto& ws = io.waitScope;
      auto fd = net::listen_socket(host, int(port_wanted), "--listen");
      if (!fd) return fail(fd.error().message());
      auto listener = io.lowLevelProvider->wrapListenSocketFd(
          *fd, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP |
                   kj::LowLevelAsyncIoProvider::ALREADY_NONBLOCK |
                   kj::LowLevelAsyncIoProvider::ALREADY_CLOEXEC);
      capnp::Capability::Client main = kj::heap<root_impl>(service, o.admin_token, admin_worker, graph_writer);
      auto accept = make_acceptor(*listener, *fd, io.provider->getTimer(), kj::mv(main), limits, o);
      auto accepting = accept->loop().eagerlyEvaluate([](kj::Exception&& e) {
        log::error("rpc: accept loop ended: {}", e.getDescription().cStr());
      });
      auto sweeping = accept->sweep().eagerlyEvaluate([](kj::Exception&& e) {
        log::error("rpc: connection sweep ended: {}", e.getDescription().cStr());
      });
      auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
      {
        std::lock_guard lock(mu);
        port = int(listener->getPort());
        stop = kj::mv(paf.fulfiller);
        ready = true;
      }
      cv.notify_all();
      run_until_stopped(io, kj::mv(paf.promise), o.poll_after_us);
      close_turn(service);  // calls held by a turn the stop cut short go on
      drain_after_stop(ws);
    } catch (const std::exception& e) {
      fail(e.what());
    } catch (const kj::Exception& e) {
      fail(std::string(e.getDescription().cStr()));
    }
  }

  void fail(std::string why) {
    std::lock_guard lock(mu);
    error = std::move(why);
    ready = true;
    cv.notify_all();
  }
};

expected<std::unique_ptr<rpc_server>> rpc_server::start(const server_options& options,
                                                        rpc_service& service) {
  SPINDLE_TRY(parse_host_port(options.listen, "--listen").error_or_ok());
  auto i = std::make_unique<impl>();
  impl* raw = i.get();
  i->thread = std::thread([raw, options, &service] {
    set_call_origin("capnp");  // every call this thread hands the service came through this door
    raw->run(options, service);
  });
  pthread_setname_np(i->thread.native_handle(), "rpc-server");
  std::unique_lock lock(i->mu);
  i->cv.wait(lock, [&] { return i->ready; });
  if (!i->error.empty()) {
    const std::string why = i->error;
    lock.unlock();
    i->thread.join();
    return make_error(errc::unavailable, "cannot listen on {}: {}", options.listen, why);
  }
  const int port = i->port;
  lock.unlock();
  std::unique_ptr<rpc_server> s(new rpc_server(std::move(i)));
  s->port_ = port;
  return s;
}

rpc_server::rpc_server(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

rpc_server::~rpc_server() {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stop) impl_->stop->fulfill();
  }
  impl_->thread.join();
}

}  // namespace spindle::transport::rpc
