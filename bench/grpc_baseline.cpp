#include "bench/grpc_baseline.hpp"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "tensor.grpc.pb.h"

namespace spindle::bench {
namespace {

class tensor_service final : public spindle::bench::Tensor::Service {
 public:
  explicit tensor_service(actors::tensor_model m) : m_(std::move(m)) {}
  grpc::Status Infer(grpc::ServerContext*, const TensorRequest* req, TensorReply* reply) override {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string& bytes = req->payload();
    const auto c0 = std::chrono::steady_clock::now();
    auto r =
        m_.compute(reinterpret_cast<const float*>(bytes.data()), {bytes.size() / sizeof(float)});
    const auto c1 = std::chrono::steady_clock::now();
    for (float x : r[0]) reply->add_result(x);
    reply->set_compute_us(
        std::uint64_t(std::chrono::duration<double, std::micro>(c1 - c0).count()));
    reply->set_server_us(std::uint64_t(std::chrono::duration<double, std::micro>(c1 - t0).count()));
    return grpc::Status::OK;
  }

 private:
  actors::tensor_model m_;
};

class grpc_impl final : public grpc_baseline {
 public:
  explicit grpc_impl(actors::tensor_model m) : service_(std::move(m)) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&service_);
    b.SetMaxReceiveMessageSize(64 << 20);
    server_ = b.BuildAndStart();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    stub_ = Tensor::NewStub(grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port_),
                                                      grpc::InsecureChannelCredentials(), args));
  }
  ~grpc_impl() override { server_->Shutdown(); }

  transport::rpc::tensor_answer infer(std::span<const float> payload) override {
    TensorRequest req;
    req.set_model("sum");
    req.set_payload(reinterpret_cast<const char*>(payload.data()), payload.size_bytes());
    TensorReply reply;
    grpc::ClientContext ctx;
    const grpc::Status st = stub_->Infer(&ctx, req, &reply);
    if (!st.ok()) return {transport::rpc::rpc_status::unavailable, st.error_message()};
    return {transport::rpc::rpc_status::ok,
            "",
            {reply.result().begin(), reply.result().end()},
            reply.server_us(),
            reply.compute_us()};
  }

  double serialization_us(std::span<const float> payload, int reps) override {
    const auto t0 = std::chrono::steady_clock::now();
    std::string out;
    for (int i = 0; i < reps; ++i) {
      TensorRequest req;
      req.set_model("sum");
      req.set_payload(reinterpret_cast<const char*>(payload.data()), payload.size_bytes());
      req.SerializeToString(&out);
    }
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
               .count() /
           reps;
  }

 private:
  tensor_service service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Tensor::Stub> stub_;
};

}  // namespace

std::unique_ptr<grpc_baseline> grpc_baseline::start(actors::tensor_model m) {
  return std::make_unique<grpc_impl>(std::move(m));
}

}  // namespace spindle::bench
