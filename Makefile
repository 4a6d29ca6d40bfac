# Spindle's entry points. Each target installs missing Debian packages first
# (quietly, and only when something is missing), then configures and builds.
#   make demo   build, generate the embedded R-MAT dataset, prepare it, sample a batch, serve
#               GraphSAGE through the actor pipeline and a DLRM through the parameter server
#   make test   build, then run every test (ctest; unit + integration)
#   make bench  build, then run the benchmarks in bench/ (prints tables)

BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
DEMO_DIR ?= demo-data
# The malloc the programs link: jemalloc (Debian's libjemalloc-dev) or glibc.
MALLOC ?= jemalloc
SPINDLE := $(BUILD_DIR)/apps/spindle

.PHONY: deps configure build app demo test bench clean gpu-check gpu-bundle

deps:
	@./scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DSPINDLE_MALLOC=$(MALLOC) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# The `spindle` binary alone (what the demo runs): no test or fuzz binaries.
app: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target spindle

demo: app
	$(SPINDLE) generate --scale 16 --edge-factor 16 --feature-dim 64 --seed 1 --force --out $(DEMO_DIR)/rmat16
	$(SPINDLE) prepare $(DEMO_DIR)/rmat16 --fanouts 25,10 --seed-distribution degree
	$(SPINDLE) info $(DEMO_DIR)/rmat16 --verify
	$(SPINDLE) sample $(DEMO_DIR)/rmat16 --seeds 0,1,2,3 --fanouts 25,10 --max-rows 8
	$(SPINDLE) place $(DEMO_DIR)/rmat16 --topology examples/topology-8server-ethernet.toml --policy fap
	$(SPINDLE) place $(DEMO_DIR)/rmat16 --topology examples/topology-8server-ethernet.toml --policy hash
	$(SPINDLE) model init --arch graphsage --in 64 --hidden 128 --classes 16 --seed 1 --out-dir $(DEMO_DIR)/sage
	$(SPINDLE) calibrate $(DEMO_DIR)/rmat16 --out $(DEMO_DIR)/psgs-calibration.json --plot $(DEMO_DIR)/psgs-calibration.png
	$(SPINDLE) serve --dataset $(DEMO_DIR)/rmat16 --model $(DEMO_DIR)/sage --calibration $(DEMO_DIR)/psgs-calibration.json --workload 5000 --rate 2000
	$(SPINDLE) serve --dataset $(DEMO_DIR)/rmat16 --model $(DEMO_DIR)/sage --calibration $(DEMO_DIR)/psgs-calibration.json --workload 5000 --clients 16 --policy loose
	$(SPINDLE) model init --arch dlrm --tables 200000,200000,100000,50000 --seed 1 --out-dir $(DEMO_DIR)/dlrm
	$(SPINDLE) serve-dlrm --model $(DEMO_DIR)/dlrm --pdb $(DEMO_DIR)/dlrm-pdb --workload 2000 --batch 256
	$(SPINDLE) profile --model ctr=$(DEMO_DIR)/dlrm --workers 2 --seconds 0.2 --steps 3 --sla-ms 20 --out $(DEMO_DIR)/profile.json
	$(SPINDLE) colocate plan --profiles examples/hera-profile-handmade.json --targets D=500,N=300,W=100
	./scripts/demo-hera.sh $(SPINDLE) $(DEMO_DIR)
	./scripts/demo-front-door.sh $(SPINDLE) $(DEMO_DIR)

test: build
	@./scripts/install-python-test-deps.sh
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

gpu-check: build
	./scripts/gpu-check.sh

# The GPU check packed for a bare accelerator machine (gpu-bundle/, <= 60 MiB):
# carry it there and run gpu-bundle/run.sh [OUT_DIR].
gpu-bundle: configure
	./scripts/gpu-bundle.sh

bench: build
	@./scripts/run-benchmarks.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) $(DEMO_DIR)
