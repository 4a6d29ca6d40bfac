# Spindle's front door: the Cap'n Proto schema every client speaks (C++ library,
# `spindle client`, `spindle shell`, the Python client). Version 1.
#
# Compatibility rules: fields and methods are only ever added (new ordinals at
# the end); a client reads `Admin.version` (or `Inference.version`) to learn what
# the server speaks. Every call answers with a per-request `Status`: one bad
# request never fails its neighbours in a batch.
@0xf8bf9206416f48e7;

const schemaVersion :UInt32 = 9;  # 2: tensor models, the SplitRPC data path; 3: load/unload;
                                  # 4: version() also says whether the server is ready;
                                  # 5: models() without a token (as KServe's metadata);
                                  # 6: graph updates and versions (updateGraph, minVersion);
                                  # 7: pairs and named outputs; 8: typed graphs (nodeType);
                                  # 9: typed graph updates (GraphUpdate.addTyped, ...)

enum Status {
  ok @0;                # the request was served; outputs are valid
  overloaded @1;        # the model's admission queue was full: retry later (backpressure)
  deadlineExceeded @2;  # the answer was not ready before the request's deadline
  badRequest @3;        # the request itself is wrong; `message` names the field and value
  unavailable @4;       # a part of the serving system needed by this request is down
  internal @5;          # a broken invariant inside the server (a bug: please report)
  unauthorized @6;      # Admin call without the right token
}

struct GnnRequest {
  model @0 :Text;            # name of a loaded GNN model (Admin.listModels)
  seeds @1 :List(Int64);     # node ids to embed/classify, each in [0, nodes)
  samplerSeed @2 :UInt64;    # the sampler's random seed: same seeds + same samplerSeed
                             # give the same answer on any server of the deployment
  deadlineUs @3 :UInt32;     # 0: no deadline; else the answer is wanted within this many
                             # microseconds of arrival, or the reply is deadlineExceeded
  seedIds @4 :List(Text);    # instead of seeds: the nodes as the user's data names them
                             # (node_names.txt / node_ids.npy of the dataset), resolved by
                             # the server; an unknown id is badRequest naming it
  minVersion @5 :UInt64;     # (version 6) the graph version the answer must include: a
                             # server that has not applied it answers unavailable; 0: any
  pairs @6 :Bool;            # (version 7) seeds are pairs to score, u0 v0 u1 v1 ...: a model
                             # with task "link" answers one score per pair (width 1)
  outputs @7 :List(Text);    # (version 7) values of the model to answer instead of its
                             # output (op names of a stack model, e.g. "conv1"): the reply
                             # holds each one's seeds x width, one after another
  nodeType @8 :Text;         # (version 8) a typed graph's calls: the seeds' node type, the
                             # seeds numbered within it (0 .. its count - 1)
}

struct GnnReply {
  status @0 :Status;
  message @1 :Text;          # empty when ok; else a one-line reason
  width @2 :UInt32;          # values per seed (classes or embedding width)
  outputs @3 :List(Float32); # seeds x width, row-major, in request order
  serverUs @4 :UInt64;       # time the server spent on the request, microseconds
  graphVersion @5 :UInt64;   # (version 6) the graph version the answer was computed on
  widths @6 :List(UInt32);   # (version 7) with named outputs: each one's width, in order
                             # (width is their sum)
}

# (version 6) One batch of graph changes, applied whole or refused whole. Node ids
# are the ids seeds use; added nodes get the ids after the last one, in order.
struct GraphUpdate {
  addSrc @0 :List(Int64);           # edges to add: addSrc[i] -> addDst[i]
  addDst @1 :List(Int64);
  addWeight @2 :List(Float32);      # one per added edge on a weighted graph, else empty
  removeSrc @3 :List(Int64);        # edges to remove (each must exist)
  removeDst @4 :List(Int64);
  addNodes @5 :Int64;               # nodes to add
  addNodeFeatures @6 :List(Float32);  # addNodes x feature width, row-major
  setIds @7 :List(Int64);           # nodes whose feature rows to replace
  setRows @8 :List(Float32);        # setIds x feature width
  removeNodes @9 :List(Int64);      # refused as seeds from then on; gone from neighbourhoods
  # (version 9) A typed graph's changes, named by type with ids local to it (the
  # fields above stay empty there); newIds come back local, in nodeChanges order.
  addTyped @10 :List(TypedEdges);
  removeTyped @11 :List(TypedEdges);
  nodeChanges @12 :List(TypedNodes);

  struct TypedEdges {
    edgeType @0 :Text;              # "src,rel,dst", or a relation no other edge type has
    src @1 :List(Int64);            # local ids of the edge type's source node type
    dst @2 :List(Int64);            # local ids of its destination node type
    weight @3 :List(Float32);       # one per added edge on a weighted graph, else empty
  }
  struct TypedNodes {
    nodeType @0 :Text;
    add @1 :Int64;                  # nodes to add (ids: the type's count, then on)
    addFeatures @2 :List(Float32);  # add x the type's feature width, row-major
    setIds @3 :List(Int64);         # local ids whose feature rows to replace
    setRows @4 :List(Float32);      # setIds x the type's feature width
    remove @5 :List(Int64);         # local ids to remove
  }
}

struct RecRequest {
  model @0 :Text;                 # name of a loaded recommendation (DLRM) model
  batch @1 :UInt32;               # samples in this request
  dense @2 :List(Float32);        # batch x denseIn, row-major
  sparse @3 :List(Bag);           # one per embedding table, in table order
  deadlineUs @4 :UInt32;
  struct Bag {
    indices @0 :List(Int64);      # keys of all samples, concatenated
    offsets @1 :List(Int64);      # batch + 1 entries: sample b owns indices[offsets[b], offsets[b+1])
  }
}

struct RecReply {
  status @0 :Status;
  message @1 :Text;
  scores @2 :List(Float32);       # one click probability per sample
  serverUs @3 :UInt64;
}

struct TensorReply {
  status @0 :Status;
  message @1 :Text;
  result @2 :List(Float32);   # the tensor model's output for this request
  serverUs @3 :UInt64;        # arrival of the control record to the reply
  computeUs @4 :UInt64;       # this request's share of its batch's compute time
}

struct SplitSession {
  workerAddress @0 :Data;     # the server's UCX worker: connect an endpoint to it and
                              # send payloads as active messages (id 7) whose 12-byte
                              # header is {callId :UInt64, model :UInt32} little-endian
  models @1 :List(Text);      # tensor models; the header's `model` indexes this list
  maxPayload @2 :UInt64;      # bytes one payload may have
}

interface Inference {
  version @0 () -> (version :UInt32, ready :Bool);
  # ready: models loaded and warmed, as KServe's /v2/health/ready (false while
  # starting and stopping; old servers always say false).
  inferGnn @1 (request :GnnRequest) -> (reply :GnnReply);
  inferGnnBatch @2 (requests :List(GnnRequest)) -> (replies :List(GnnReply));
  # At most 1,024 requests and 65,536 seeds in all per call: a larger call is
  # refused up front with ONE reply of status badRequest naming the limit.
  inferRec @3 (request :RecRequest) -> (reply :RecReply);
  # Tensor models (version 2): a float32 payload in, a float32 result out.
  # Unified path: the payload travels inside the Cap'n Proto message.
  inferTensor @4 (model :Text, payload :Data, deadlineUs :UInt32) -> (reply :TensorReply);
  # SplitRPC path: the payload goes over UCX straight into the model's tensor
  # queue; this small control record names it by callId (unique per session).
  openSplit @5 () -> (session :SplitSession);
  inferSplit @6 (model :Text, callId :UInt64, bytes :UInt64, deadlineUs :UInt32) -> (reply :TensorReply);
  # Version 5: what the served models take (no token: as KServe's model metadata),
  # for clients that build calls from a model's description (load generators).
  models @7 () -> (models :List(ModelInfo));
}

struct ModelInfo {
  name @0 :Text;
  kind @1 :Text;        # "gnn" or "dlrm" (any recommendation model; arch says which)
  arch @2 :Text;        # graphsage | gcn | gat | gin | dlrm
  inputWidth @3 :UInt32;
  outputWidth @4 :UInt32;
  tableRows @5 :List(UInt64);  # recommendation models: rows of each embedding table, in order
  task @6 :Text;        # (version 7) GNNs: "node", or "link" (calls may give pairs to score)
  nodeTypes @7 :List(Text);  # (version 8) a typed model: the node types a call may name
}

struct Tunable {
  name @0 :Text;        # e.g. "routing_policy", "batch_deadline_us", "max_batch", "max_queue"
  value @1 :Text;       # as text: "strict", "2000", ...
}

interface Admin {
  version @0 () -> (version :UInt32, ready :Bool);  # ready: as Inference.version
  # Every call below needs the token from the server's configuration; a wrong
  # token answers `unauthorized` (compared in constant time).
  stats @1 (token :Text) -> (status :Status, message :Text, json :Text);
  # `json`: {"models": {NAME: {"requests", "ok", "overloaded", "deadline_exceeded",
  #   "bad_request", "errors", "in_flight", "latency_ms": {"p50", "p99", "p999"},
  #   "batches", "small_executor_batches", "large_executor_batches", "tunables": {...}}},
  #   "uptime_s"}
  listModels @2 (token :Text) -> (status :Status, message :Text, models :List(ModelInfo));
  getTunables @3 (token :Text, model :Text) -> (status :Status, message :Text, tunables :List(Tunable));
  setTunable @4 (token :Text, model :Text, name :Text, value :Text) -> (status :Status, message :Text);
  # Applies at once, without restart; the new value shows in getTunables and stats.
  members @5 (token :Text) -> (status :Status, message :Text, json :Text);
  # Cluster membership and health: {"members": [{"rank", "name", "alive"}]} (one
  # entry, this process, for `spindle serve`).
  loadModel @6 (token :Text, name :Text, path :Text) -> (status :Status, message :Text);
  # (version 3) Loads the GNN model directory `path` (model.toml + weights, read
  # by the server) under `name` and serves it over the server's dataset with the
  # server's batching and routing defaults; its input width must match the
  # dataset's features. badRequest names the path or name that is wrong (a name
  # already loaded, a missing directory, a width mismatch); the running models
  # are untouched either way.
  unloadModel @7 (token :Text, name :Text) -> (status :Status, message :Text);
  # (version 3) Stops taking calls for `name` at once, lets its calls in flight
  # finish (10 s at most), then stops its actors and frees it.
  updateGraph @8 (token :Text, update :GraphUpdate)
      -> (status :Status, message :Text, version :UInt64, nodes :Int64, newIds :List(Int64));
  # (version 6) Applies the batch (durable in the graph log before the answer) and
  # returns the new graph version: every call admitted after this answer sees it.
  # badRequest names the first bad item; unavailable: the server takes no updates.
  graphVersion @9 (token :Text) -> (status :Status, message :Text, version :UInt64, nodes :Int64);
}

interface Spindle {
  inference @0 () -> (inference :Inference);
  admin @1 () -> (admin :Admin);
}
