#!/usr/bin/env python3
"""A chat loop over a GGUF model with the sprout package.

    SPROUT_LIBRARY=build/libsprout.so PYTHONPATH=python \\
        python3 examples/python/chat.py ../shared/models/stories260K.gguf

Each line typed is a user message; the reply streams as it is generated
and only the new turn is computed (the KV cache keeps the conversation).
An empty line or end of input ends the chat. Written against
openvino_genai's API: with ``import openvino_genai as sprout`` it runs the
same on an OpenVINO model directory.
"""

import argparse
import sys

import sprout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a .gguf file, or a directory holding one")
    parser.add_argument("--system", default="", help="a system message")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--metrics", action="store_true", help="print each reply's timings to stderr")
    args = parser.parse_args()

    pipe = sprout.LLMPipeline(args.model, "CPU")
    config = sprout.GenerationConfig()
    config.max_new_tokens = args.max_new_tokens

    def streamer(piece: str) -> sprout.StreamingStatus:
        print(piece, end="", flush=True)
        return sprout.StreamingStatus.RUNNING

    pipe.start_chat(args.system)
    try:
        while True:
            if sys.stdin.isatty():
                print("> ", end="", flush=True)
            line = sys.stdin.readline()
            if not line.strip():
                break
            result = pipe.generate(line.strip(), config, streamer)
            print()
            if args.metrics:
                m = result.perf_metrics
                print(f"[{m.get_num_input_tokens()} prompt tokens, {m.get_num_cached_tokens()} cached; "
                      f"first token {m.get_ttft().mean:.1f} ms; {m.get_throughput().mean:.1f} tokens/s]",
                      file=sys.stderr)
    finally:
        pipe.finish_chat()
    return 0


if __name__ == "__main__":
    sys.exit(main())
