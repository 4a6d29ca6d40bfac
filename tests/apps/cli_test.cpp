// Runs the real `spindle` binary as a user would and checks its output and
// exit codes, including bad input and numpy compatibility of what it writes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/blas_kernels.hpp"
#include "tests/apps/cli_run.hpp"

namespace {

namespace fs = std::filesystem;


class cli_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        (fs::temp_directory_path() / ("spindle_cli_test_" + std::to_string(getpid()))).string());
    fs::remove_all(*dir_);
    fs::create_directories(*dir_);
    auto r = run("generate --scale 9 --edge-factor 8 --feature-dim 16 --seed 3 --out " + *dir_ +
                 "/rmat");
    ASSERT_EQ(r.code, 0) << r.out;
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static std::string* dir_;
};
std::string* cli_test::dir_ = nullptr;

TEST_F(cli_test, generate_prints_the_summary_table) {
  auto r = run("generate --scale 6 --out " + *dir_ + "/small");
  EXPECT_EQ(r.code, 0);
  for (auto key : {"nodes", "edges", "out-degree p50/p90/p99/max", "PSGS p50/p99/max",
                   "FAP mass in top 1% / 10%"})
    EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
}

// `--out EXISTING` used to overwrite in place and leave the
// earlier dataset's features.npy / labels.npy beside the new metadata. Now a
// non-empty directory is refused by name, and --force replaces it whole.
TEST_F(cli_test, an_existing_output_directory_is_refused_or_replaced_whole) {
  const std::string out = *dir_ + "/reused";
  ASSERT_EQ(run("generate --scale 6 --feature-dim 8 --out " + out).code, 0);
  ASSERT_TRUE(fs::exists(out + "/features.npy"));
  auto r =
      refused("generate --scale 5 --feature-dim 0 --out " + out, "--out " + out + ": not empty");
  EXPECT_NE(r.out.find("--force"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out + "/features.npy"));  // left as it was
  r = run("generate --scale 5 --feature-dim 0 --force --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(out + "/features.npy"));  // nothing stale beside the new metadata
  auto info = run_stdout("info " + out + " --json --verify");
  ASSERT_EQ(info.code, 0) << info.out;
  EXPECT_EQ(nlohmann::json::parse(info.out)["num_nodes"], 32);
  for (const auto& e : fs::directory_iterator(*dir_))  // no staging or old folders left
    EXPECT_EQ(e.path().filename().string().find("reused."), std::string::npos) << e.path();
}

// parse errors follow the house format (exit 1, "spindle:
// error:"; CLI11 exited 104-106 without it), suggest the nearest flag or
// subcommand, and bounds are readable (not a 300-digit double).
TEST_F(cli_test, parse_errors_use_the_house_format_and_suggest_a_spelling) {
  auto r = refused("serv", "spindle: error: unknown command 'serv' (did you mean 'serve'?)");
  r = refused("serve --datset x --model y",
              "spindle: error: '--datset' is not a flag here (did you mean '--dataset'?)");
  r = refused("prepare --undirectd", "(did you mean '--undirected'?)");
  r = refused("--threads -1 info x", "spindle: error: --threads: Value -1 not in range 0 to 4096");
  EXPECT_LT(r.out.size(), 200u) << r.out;
  // Bounds and choices checked by the parser, the same as the live tunables.
  r = run("serve --dataset x --model y --max-batch 0");
  EXPECT_NE(r.out.find("--max-batch: Value 0 not in range 1 to 65536"), std::string::npos) << r.out;
  r = run("serve --dataset x --model y --policy stric");
  EXPECT_NE(r.out.find("--policy: stric not in {strict,loose,fixed}"), std::string::npos) << r.out;
  r = run("serve-dlrm");
  EXPECT_NE(r.out.find("--model is required"), std::string::npos) << r.out;
  // A port out of range was bound as a random one; now refused before anything loads.
  r = refused("serve --dataset /nonexistent --model /nonexistent --listen 127.0.0.1:99999",
              "--listen '127.0.0.1:99999': port 99999 is not in 0..65535");
  r = refused("frob", "spindle: error: unknown command 'frob'");
  EXPECT_EQ(run("--help").code, 0);
}

TEST_F(cli_test, info_json_is_machine_readable) {
  auto r = run_stdout("info " + *dir_ + "/rmat --json --verify");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["num_nodes"], 512);
  EXPECT_EQ(j["feature_dim"], 16);
  EXPECT_EQ(j["metrics"]["fanouts"], nlohmann::json::array({25, 10}));
  EXPECT_GT(j["metrics"]["psgs"]["max"].get<double>(), 1.0);
}

TEST_F(cli_test, sample_json_lists_blocks) {
  auto r =
      run_stdout("sample " + *dir_ + "/rmat --seeds 1,2,3 --fanouts 5,3 --json --executor pooled");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["hop_end"].size(), 3u);
  EXPECT_EQ(j["seed_local"], nlohmann::json::array({0, 1, 2}));
  EXPECT_EQ(j["indices"].size(), j["num_edges"].get<std::size_t>());
}

TEST_F(cli_test, bad_input_gives_a_named_error_and_exit_code_1) {
  auto r = refused("sample " + *dir_ + "/rmat --seeds 1,99999",
                   "seed 99999 (position 1) out of range (num_nodes=512)");
  r = refused("sample " + *dir_ + "/rmat --seeds 1 --fanouts 25,x",
              "fanouts: 'x' is not an integer");
  r = refused("info " + *dir_ + "/does-not-exist", "metadata.json: cannot open");
  r = refused("prepare --input " + *dir_ + "/missing.txt --out " + *dir_ + "/x",
              "missing.txt: cannot open");
}

TEST_F(cli_test, prepare_converts_snap_and_recomputes_in_place) {
  std::ofstream(*dir_ + "/edges.txt") << "# tiny\n10 20\n20 30\n30 10\n10 30\n";
  auto r = run("prepare --input " + *dir_ + "/edges.txt --undirected --fanouts 2 --out " + *dir_ +
               "/tiny");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(*dir_ + "/tiny/node_ids.npy"));
  r = run("prepare " + *dir_ + "/tiny --fanouts 1,1 --seed-distribution degree");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(run_stdout("info " + *dir_ + "/tiny --json").out);
  EXPECT_EQ(j["metrics"]["fanouts"], nlohmann::json::array({1, 1}));
  EXPECT_EQ(j["metrics"]["seed_distribution"], "degree");
}

// ego-Facebook's file lists each undirected edge once (u < v): read as directed,
// a node aggregates over one side only. prepare says so and names the flag.
TEST_F(cli_test, prepare_warns_when_an_edge_list_looks_undirected) {
  std::ofstream(*dir_ + "/once.txt") << "0 1\n0 2\n1 2\n2 3\n";
  auto r = run("prepare --input " + *dir_ + "/once.txt --out " + *dir_ + "/once");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("looks like an undirected graph listed once per edge"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("prepare it with --undirected"), std::string::npos) << r.out;
  r = run("prepare --input " + *dir_ + "/once.txt --undirected --out " + *dir_ + "/both");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("looks like an undirected graph"), std::string::npos) << r.out;
  std::ofstream(*dir_ + "/directed.txt") << "0 1\n2 1\n1 0\n3 2\n";
  r = run("prepare --input " + *dir_ + "/directed.txt --out " + *dir_ + "/directed");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("undirected"), std::string::npos) << r.out;
}

TEST_F(cli_test, every_subcommand_has_complete_help) {
  for (auto [cmd, flag] : {std::pair{"generate", "--edge-factor"},
                           std::pair{"prepare", "--seed-distribution"}, std::pair{"info", "--json"},
                           std::pair{"sample", "--fanouts"}, std::pair{"devices", "--help"}}) {
    auto r = run(std::string(cmd) + " --help");
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find(flag), std::string::npos) << cmd << "\n" << r.out;
  }
}

// A `model init` flag the architecture would ignore is refused naming the flag.
TEST_F(cli_test, model_init_refuses_flags_its_architecture_ignores) {
  const fs::path ignored = fs::path(*dir_) / "ignored";
  const std::string out = " --out-dir " + ignored.string();
  refused("model init --arch graphsage --in 4 --hidden 8 --classes 3 --heads 2" + out,
          "--heads: --arch graphsage has no attention heads (--arch gat has)");
  refused("model init --arch dlrm --layers 3" + out, "--layers: --arch dlrm");
  refused("model init --arch dlrm --fanouts 5,5" + out, "--fanouts: --arch dlrm samples no graph");
  refused("model init --arch ncf --in 13" + out, "--in: --arch ncf has no dense input");
  refused("model init --arch wnd --variant C" + out, "--variant: --arch wnd has one shape");
  EXPECT_FALSE(fs::exists(ignored / "model.toml"));
  EXPECT_EQ(run("model init --arch gat --in 4 --hidden 8 --classes 3 --heads 2" + out).code, 0);
}

// The spindle binary runs on the malloc its build chose (SPINDLE_MALLOC), and
// `devices` says which, as the running process sees it.
TEST_F(cli_test, devices_names_the_malloc_the_build_chose) {
  const auto r = run_stdout("devices");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(std::string("\nmalloc: ") + SPINDLE_MALLOC_BUILT + " "), std::string::npos) << r.out;
}

// OpenBLAS takes CPUs it does not know by model for Prescott (SSE3 kernels);
// spindle restarts itself with the kernels the CPU's features allow, unless
// the user chose them (OPENBLAS_CORETYPE), and says so in `devices`.
TEST_F(cli_test, gemms_run_the_kernels_the_cpu_allows) {
  ::unsetenv("OPENBLAS_CORETYPE");
  auto r = run_stdout("devices");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto at = r.out.find("BLAS kernels: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const auto core = r.out.substr(at + 14, r.out.find_first_of(" \n", at + 14) - at - 14);
  const auto best = spindle::best_blas_core();
  EXPECT_GE(spindle::blas_core_level(core), spindle::blas_core_level(best)) << r.out;
  ::setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  r = run_stdout("devices");
  ::unsetenv("OPENBLAS_CORETYPE");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("BLAS kernels: Prescott\n"), std::string::npos) << r.out;
  // A marker the user set is not a restart's: ignored, the check made as usual.
  ::setenv("SPINDLE_BLAS_RESTARTED_FROM", "Foo", 1);
  r = run_stdout("devices");
  ::unsetenv("SPINDLE_BLAS_RESTARTED_FROM");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("Foo"), std::string::npos) << r.out;
  // Started through the dynamic loader, /proc/self/exe is the loader: no restart
  // (it would hand the loader the arguments), the command still runs.
  const char* loader = "/lib64/ld-linux-x86-64.so.2";
  if (::access(loader, X_OK) == 0) {
    std::string cmd = std::string(loader) + " " + SPINDLE_BINARY + " devices 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    std::array<char, 4096> buf;
    for (std::size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
    EXPECT_EQ(pclose(p), 0) << out;
    EXPECT_NE(out.find("BLAS kernels: "), std::string::npos) << out;
  }
}

TEST_F(cli_test, numpy_reads_every_array) {
  if (!fs::exists("/usr/bin/python3") ||
      std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0)
    GTEST_SKIP() << "python3-numpy not installed";
  std::string script = *dir_ + "/check.py";
  std::ofstream(script) << "import json, sys, numpy as np\n"
                           "d = sys.argv[1]\n"
                           "m = json.load(open(d + '/metadata.json'))\n"
                           "for name, r in m['arrays'].items():\n"
                           "    a = np.load(d + '/' + r['file'], mmap_mode='r')\n"
                           "    assert list(a.shape) == r['shape'], name\n"
                           "    assert str(a.dtype) == r['dtype'], name\n"
                           "ip = np.load(d + '/indptr.npy')\n"
                           "assert ip[-1] == m['num_edges']\n"
                           "print('ok', len(m['arrays']))\n";
  std::string cmd = "/usr/bin/python3 " + script + " " + *dir_ + "/rmat";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

}  // namespace

namespace {

TEST_F(cli_test, place_prints_the_plan_and_the_evaluator_as_json) {
  auto r = run_stdout("place " + *dir_ +
                      "/rmat --topology " SPINDLE_SOURCE_DIR
                      "/examples/topology-2server-infiniband.toml --requests 50 --batch 8 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["policy"], "fap");
  EXPECT_EQ(j["nodes"], 512);
  EXPECT_EQ(j["row_bytes"], 64);
  EXPECT_EQ(j["lookup_bytes"], 512 * 6);
  EXPECT_EQ(j["shards"].size(), 8u);  // 4 GPUs, 2 host memories, 2 disks
  EXPECT_LE(j["latency_us"]["p50"].get<double>(), j["latency_us"]["p99"].get<double>());
  double share = 0;
  for (auto& [name, link] : j["links"].items()) share += link["share"].get<double>();
  EXPECT_NEAR(share, 1.0, 1e-9);
}

TEST_F(cli_test, place_text_output_and_named_errors) {
  auto r = run("place " + *dir_ +
               "/rmat --topology " SPINDLE_SOURCE_DIR
               "/examples/topology-8server-ethernet.toml --policy hash --requests 20");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("placement 'hash'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aggregation latency p50"), std::string::npos) << r.out;
  std::string bad = *dir_ + "/bad-topology.toml";
  std::ofstream(bad)
      << "[[server]]\nname = \"a\"\nnuma_groups = 2\n[[server.device]]\nmemory = \"1GiB\"\n";
  r = refused("place " + *dir_ + "/rmat --topology " + bad,
              "bad-topology.toml: server[0] ('a').numa_groups = 2 is larger than the "
              "server's 1 devices");
  r = refused("place " + *dir_ +
                  "/rmat --topology " SPINDLE_SOURCE_DIR
                  "/examples/topology-host-2proc.toml --policy metis",
              "--policy: metis not in {fap,hash,degree,random}");
}

}  // namespace

namespace {

TEST_F(cli_test, model_init_then_info_lists_pyg_tensor_names) {
  std::string dir = *dir_ + "/sage-model";
  auto r = run(
      "model init --arch graphsage --in 16 --hidden 32 --classes 4 --layers 2 --seed 3 --out-dir " +
      dir);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run("model info " + dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("convs.0.lin_l.weight                     [32, 16]       layer 0 SAGEConv: "
                       "neighbour-mean projection"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("convs.1.lin_r.weight                     [4, 32]        layer 1 SAGEConv: "
                       "root projection"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("parameters: 1316"), std::string::npos) << r.out;  // 16*32*2+32 + 32*4*2+4
  r = refused("model init --arch transformer --in 1 --hidden 1 --classes 1 --out-dir " + dir,
              "model.arch = 'transformer'");
  r = refused("model info " + *dir_ + "/no-such-model", "model.toml: cannot open");
}

// Files that never end or are not files: a clean error naming them (before:
// std::bad_alloc and rc 134, or a hang on a FIFO). A weights path that leaves
// the model directory is refused before the file system is touched.
// A front door on a non-loopback address needs an admin token (refused before
// anything binds), and a token file other users can read is refused by mode.
TEST_F(cli_test, serve_refuses_exposure_without_a_token_and_a_token_others_can_read) {
  const std::string model = *dir_ + "/exposure-model";
  ASSERT_EQ(run("model init --arch gcn --in 16 --hidden 8 --classes 3 --out-dir " + model).code, 0);
  auto r = refused("serve --dataset " + *dir_ + "/rmat --model " + model + " --listen 0.0.0.0:0",
                   "--listen 0.0.0.0:0: not a loopback address");
  r = refused("serve --dataset " + *dir_ + "/rmat --model " + model +
                  " --listen 127.0.0.1:0 --metrics 0.0.0.0:0",
              "--metrics 0.0.0.0:0");
  const std::string token = *dir_ + "/open.token";
  std::ofstream(token) << "0123456789abcdef0123456789abcdef\n";
  fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                             fs::perms::others_read | fs::perms::others_write);
  r = refused("serve --dataset " + *dir_ + "/rmat --model " + model +
                  " --listen 127.0.0.1:0 --admin-token-file " + token,
              "open to other users (mode 0646); run chmod 600");
}

TEST_F(cli_test, hostile_config_files_fail_cleanly_and_weights_stay_in_the_model_dir) {
  const std::string dir = *dir_ + "/hostile-model";
  fs::create_directories(dir);
  fs::remove(dir + "/model.toml");
  fs::create_symlink("/dev/zero", dir + "/model.toml");
  auto r = refused("model info " + dir, "a link to a file outside the model folder");
  r = refused("cluster-status --config /dev/zero",
              "/dev/zero: topology file must be a regular file");
  const std::string fifo = *dir_ + "/fifo.toml";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  r = refused("cluster-status --config " + fifo, "found a FIFO");
  fs::remove(dir + "/model.toml");
  std::ofstream(dir + "/model.toml")
      << "[model]\nname = \"x\"\narch = \"gcn\"\nweights = \"../../../../etc/hostname\"\n"
         "in = 4\nhidden = 4\nout = 2\n";
  r = refused("model info " + dir, "must name a file inside the model directory");
  EXPECT_EQ(r.out.find("bytes"), std::string::npos) << r.out;  // nothing about /etc/hostname
  const std::string ds = *dir_ + "/zero-ds";
  fs::create_directories(ds);
  fs::remove(ds + "/metadata.json");
  fs::create_symlink("/dev/zero", ds + "/metadata.json");
  r = refused("info " + ds, "dataset metadata must be a regular file");
}

}  // namespace

namespace {

TEST_F(cli_test, calibrate_writes_the_calibration_table_and_plot) {
  std::string out = *dir_ + "/cal.json", png = *dir_ + "/cal.png";
  auto r = run("calibrate " + *dir_ + "/rmat --batches 60 --buckets 5 --max-seeds 64 --out " + out +
               " --plot " + png);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("latency-preferred, PSGS-Strict"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_GT(fs::file_size(png), 1000u);
  std::ifstream f(png, std::ios::binary);
  char magic[4] = {};
  f.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
}

// Too few batches to fit curves: a clear error naming the knobs, no calibration file.
TEST_F(cli_test, calibrate_refuses_to_fit_curves_from_too_few_batches) {
  std::string out = *dir_ + "/cal-few.json";
  auto r =
      refused("calibrate " + *dir_ + "/rmat --batches 2 --buckets 10 --out " + out + " --plot ''",
              "PSGS buckets");
  EXPECT_NE(r.out.find("--batches (now 2)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace

namespace {

TEST_F(cli_test, serve_drives_a_workload_through_the_actor_pipeline) {
  std::string model = *dir_ + "/serve-model";
  ASSERT_EQ(run("model init --arch gcn --in 16 --hidden 16 --classes 3 --out-dir " + model).code,
            0);
  auto r = run_stdout("serve --dataset " + *dir_ + "/rmat --model " + model +
                      " --workload 300 --clients 8 --max-batch 8 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["answered"], 300);
  EXPECT_EQ(j["errors"], 0);
  EXPECT_GT(j["throughput_rps"].get<double>(), 0.0);
  EXPECT_LE(j["latency_ms"]["p50"].get<double>(), j["latency_ms"]["p99"].get<double>());
  // Without --calibration the server calibrates now and says what it found.
  r = run("serve --dataset " + *dir_ + "/rmat --model " + model + " --workload 50");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("no --calibration: calibrating PSGS routing now"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("PSGS routing calibrated: 100 batches on inline"), std::string::npos)
      << r.out;
  std::string wide = *dir_ + "/wide-model";
  ASSERT_EQ(run("model init --arch gcn --in 99 --hidden 16 --classes 3 --out-dir " + wide).code, 0);
  r = refused("serve --dataset " + *dir_ + "/rmat --model " + wide + " --workload 10",
              "model input width 99 does not match");
  // Several GPUs need GPUs; a bad topology file is named (here there is no GPU).
  r = refused("serve --dataset " + *dir_ + "/rmat --model " + model + " --device host --gpus 2",
              "--gpus 2 needs GPUs (--device host serves on the host)");
  r = refused("serve --dataset " + *dir_ + "/rmat --model " + model +
                  " --device host --topology /nonexistent/topology.toml --workload 10",
              "/nonexistent/topology.toml");
}

TEST_F(cli_test, serve_dlrm_serves_tables_from_the_parameter_server) {
  const std::string model = *dir_ + "/dlrm", pdb = *dir_ + "/dlrm-pdb";
  ASSERT_EQ(run("model init --arch dlrm --in 13 --hidden 16 --tables 2000,500 --seed 2 --out-dir " +
                model)
                .code,
            0);
  auto r = run_stdout("serve-dlrm --model " + model + " --pdb " + pdb +
                      " --workload 40 --batch 64 --instances 2 --hit-rate-threshold 1.0 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["answered"], 40);
  EXPECT_EQ(j["errors"], 0);
  EXPECT_EQ(j["tables"]["emb1"]["lookups"], 40);
  EXPECT_EQ(j["tables"]["emb0"]["defaulted"],
            0);  // threshold 1.0: every miss fetched synchronously
  {
    std::ofstream f(*dir_ + "/hps.toml");
    f << "[hps]\nhit_rate_threshold = 0.0\n[hps.tables.emb1]\nhit_rate_threshold = 1.0\n";
  }
  r = run_stdout("serve-dlrm --model " + model + " --pdb " + pdb + " --hps-config " + *dir_ +
                 "/hps.toml --workload 20 --batch 64 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tables"]["emb0"]["sync"], 0);  // threshold 0.0: never blocks
  EXPECT_GT(j["tables"]["emb0"]["defaulted"].get<int>(), 0);
  EXPECT_EQ(j["tables"]["emb1"]["defaulted"], 0);  // its override: always synchronous
  {
    std::ofstream f(*dir_ + "/bad-hps.toml");
    f << "[hps.tables.emb0]\ncache_fraction = 0\n";
  }
  r = refused("serve-dlrm --model " + model + " --pdb " + pdb + " --hps-config " + *dir_ +
                  "/bad-hps.toml --workload 1",
              "bad-hps.toml: hps.tables.emb0.cache_fraction = 0");
  r = refused("hps load --pdb " + pdb + " --table extra --npy " + *dir_ + "/rmat/indptr.npy",
              "indptr.npy: embedding table must be 2-D");
  r = refused("serve-dlrm --model " + model + " --pdb " + pdb + " --workload 1 --vdb memcached",
              "--vdb 'memcached'");
  r = refused("serve-dlrm --model " + model + " --pdb " + pdb +
                  " --workload 1 --vdb redis --vdb-redis 127.0.0.1:1",
              "redis 127.0.0.1:1");
}

}  // namespace
