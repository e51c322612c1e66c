"""Serving a compiled artifact over HTTP (`dycl-serve`, the optional extra `serve`).

- `dycl.serve.codec`: the wire format, numpy only: what a client writes and reads;
- `dycl.serve.deployment`: the Ray Serve deployment (imports Ray; never torch).

The server sits above the runtime: it loads an artifact with `dycl.load` and batches the
requests that arrive together into `CompiledModel.run_many`.
"""
