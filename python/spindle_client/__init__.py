"""Python client of Spindle's Cap'n Proto front door (schema: spindle.capnp).

Blocking (numpy in and out):

    from spindle_client import Client
    with Client("127.0.0.1:7400", model="sage") as c:
        out = c.infer_gnn([1, 2, 3])    # float32 array [3, width]

asyncio:

    import spindle_client as sc

    async def main():
        async with sc.connect("127.0.0.1:7400", token_file="admin.token") as c:
            r = await c.infer_gnn("sage", [1, 2, 3])
            print(r.outputs)            # one list of floats per seed
            print(await c.stats())      # dict

    sc.run(main())                      # scripts; in a notebook: await sc.start(main())

Exporting a PyTorch Geometric model (needs torch and torch_geometric, not pycapnp):

    from spindle_client.export import export_pyg
    export_pyg(model, "models/sage", name="sage", fanouts=[25, 10])
"""
# The client classes load pycapnp; imported on first use, so spindle_client.export
# works where only torch and torch_geometric are installed.
_LAZY = {"Client": ".blocking", "AsyncClient": ".client", "GnnResult": ".client",
         "RecResult": ".client", "SpindleError": ".client", "connect": ".client", "run": ".client",
         "start": ".client", "UpdateResult": ".client", "GnnOutputs": ".blocking",
         "DoorDown": "._doors"}


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["AsyncClient", "Client", "DoorDown", "GnnResult", "RecResult", "SpindleError", "connect",
           "run", "start"]
