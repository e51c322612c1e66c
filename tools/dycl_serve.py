"""dycl-serve: serve a compiled artifact over HTTP with Ray Serve (the optional extra `serve`).

    pip install -e '.[serve]'
    dycl-serve out/ --port 8000                            # POST inputs to http://127.0.0.1:8000/
    dycl-serve out/ --port 8000 --verify-key key.pub       # only if out/ is signed with its key
    dycl-serve out/ --port 8000 --max-batch-size 32 --batch-wait-ms 5

Starts a local Ray instance, deploys the artifact (`dycl.serve.deployment`) and serves until
Ctrl-C, then shuts Ray down. Requests that arrive within `--batch-wait-ms` of each other, up
to `--max-batch-size`, run as one `run_many`. The wire format is `dycl.serve.codec`'s;
`examples/serve_client.py` is a client. `GET /` describes the model's inputs.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from dycl.tools.exit_status import exit_status

INSTALL_HINT = "pip install -e '.[serve]'"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dycl-serve", description=__doc__.split("\n")[0])
    parser.add_argument("artifact", help="an artifact directory from dycl-compile or CompiledModel.save")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for all)")
    parser.add_argument(
        "--verify-key", metavar="KEY.pub",
        help="refuse the artifact unless it is signed with this elliptic-curve public key's private key (PEM)",
    )
    parser.add_argument("--max-batch-size", type=int, default=32, help="most requests in one run_many (default 32)")
    parser.add_argument(
        "--batch-wait-ms", type=float, default=5.0,
        help="how long a batch waits for more requests before it runs (default 5 ms)",
    )
    parser.add_argument("--threads", type=int, help="runtime threads per sub-DNN (default: the manifest's, or every core)")
    parser.add_argument("--num-cpus", type=int, help="CPUs of the local Ray instance (default: every core)")
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.max_batch_size < 1 or args.batch_wait_ms < 0:
        raise SystemExit("dycl-serve: error: --max-batch-size must be at least 1 and --batch-wait-ms not negative")
    try:
        import ray
        from ray import serve
    except ImportError as error:
        raise SystemExit(
            f"dycl-serve: error: serving needs Ray Serve, the optional extra `serve` ({error}); "
            f"install it with: {INSTALL_HINT}"
        ) from None
    from dycl.runtime.artifact import read_manifest
    from dycl.runtime.signing import verify_artifact

    # Refuse a bad artifact here, before Ray starts; the replica checks again as it loads.
    if args.verify_key:
        verify_artifact(args.artifact, args.verify_key)
    manifest = read_manifest(args.artifact)

    from dycl.serve.deployment import application

    ray.init(num_cpus=args.num_cpus, include_dashboard=False)
    # Ctrl-C or SIGTERM: shut Serve and Ray down, however many arrive (set after ray.init,
    # whose own SIGTERM handler aborts the process).
    stop = threading.Event()
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, lambda *_: stop.set())
    try:
        serve.start(http_options={"host": args.host, "port": args.port})
        serve.run(
            application(
                args.artifact, args.verify_key, args.threads, args.max_batch_size, args.batch_wait_ms / 1000
            ),
            name="dycl",
            route_prefix="/",
        )
        print(
            f"dycl-serve: serving {manifest['entry']}() of {args.artifact} at http://{args.host}:{args.port}/ "
            "(POST inputs, GET a description; Ctrl-C stops)",
            flush=True,
        )
        while not stop.wait(1.0):
            pass
        return 0
    finally:
        serve.shutdown()
        ray.shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(argv)
    except SystemExit as exit_:
        return exit_status(exit_)
    except Exception as err:  # one line, never a traceback: a refused artifact, a failed deployment
        from dycl.runtime import ArtifactError

        name = "error" if isinstance(err, ArtifactError) else type(err).__name__
        print(f"dycl-serve: {name}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
