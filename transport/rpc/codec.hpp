// Translation between the Cap'n Proto messages of spindle.capnp and the plain
// types of rpc_types.hpp, shared by the server and the client. Internal to
// transport/rpc/ (Cap'n Proto types stay here).
#pragma once

#include "transport/rpc/rpc_types.hpp"
#include "transport/rpc/spindle.capnp.h"

namespace spindle::transport::rpc::detail {

inline ::capnp::Text::Reader text(const std::string& s) { return {s.c_str(), s.size()}; }
inline std::string str(::capnp::Text::Reader t) { return {t.cStr(), t.size()}; }

/// The words a message holding `c` (or `a`) takes, a little more rather than
/// less: the first segment is allocated this size (without a hint Cap'n Proto
/// allocates 8 KiB per message, a large malloc per call at each end).
::capnp::MessageSize size_of(const gnn_call& c);
::capnp::MessageSize size_of(const gnn_answer& a);
::capnp::MessageSize size_of(const rec_call& c);
::capnp::MessageSize size_of(const rec_answer& a);

::Status to_wire(rpc_status s);
rpc_status from_wire(::Status s);

void write(::GnnRequest::Builder b, const gnn_call& c);
gnn_call read(::GnnRequest::Reader r);
void write(::GnnReply::Builder b, const gnn_answer& a);
gnn_answer read(::GnnReply::Reader r);
void write(::GraphUpdate::Builder b, const graph_edit& e);
graph_edit read(::GraphUpdate::Reader r);
void write(::RecRequest::Builder b, const rec_call& c);
rec_call read(::RecRequest::Reader r);
void write(::RecReply::Builder b, const rec_answer& a);
rec_answer read(::RecReply::Reader r);
void write(::TensorReply::Builder b, const tensor_answer& a);
tensor_answer read(::TensorReply::Reader r);

}  // namespace spindle::transport::rpc::detail
