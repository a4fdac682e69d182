"""The Python package against the build's libsprout.so and stories260K
(tests/python/run.sh sets SPROUT_LIBRARY, SPROUT_CLI, SPROUT_MODEL and SPROUT_SOURCE_DIR)."""

import ctypes
import os
import subprocess
import sys
import threading

import pytest

import sprout
from sprout import _lib

MODEL = os.environ["SPROUT_MODEL"]
CLI = os.environ["SPROUT_CLI"]
PROMPT = "Once upon a time"
N = 40


def sprout_run(prompt, n):
    out = subprocess.run([CLI, "run", "-m", MODEL, "-p", prompt, "-n", str(n), "--temp", "0"],
                         check=True, capture_output=True)
    return out.stdout.decode().removesuffix("\n")


@pytest.fixture(scope="module")
def pipe():
    with sprout.LLMPipeline(MODEL, "CPU") as p:
        yield p


def test_the_installed_package_is_tested():
    assert "site-packages" in sprout.__file__
    assert sprout.library_version() == sprout.__version__


def test_generate_greedy_equals_cli(pipe):
    r = pipe.generate(PROMPT, max_new_tokens=N)
    assert isinstance(r, sprout.DecodedResults)
    assert str(r) == r.texts[0] == sprout_run(PROMPT, N)
    assert r.finish_reasons == ["length"]
    m = r.perf_metrics
    assert m.get_num_generated_tokens() == N == len(r.tokens[0])
    assert m.get_num_input_tokens() == len(pipe.get_tokenizer().encode(PROMPT).input_ids[0])
    assert m.get_ttft().mean > 0 and m.get_tpot().mean > 0 and m.get_throughput().mean > 0
    assert m.get_load_time() > 0
    mean, std = m.get_tpot()
    assert std >= 0 and mean == m.get_tpot().mean
    assert 0 < m.get_inference_duration().mean <= m.get_generate_duration().mean
    both = m + pipe.generate(PROMPT, max_new_tokens=N).perf_metrics
    assert both.get_num_generated_tokens() == 2 * N and both.get_ttft().std >= 0


def test_config_object_and_call(pipe):
    config = pipe.get_generation_config()
    config.max_new_tokens = 12
    assert config.is_greedy_decoding()
    assert str(pipe(PROMPT, config)) == sprout_run(PROMPT, 12)
    config.update_generation_config(do_sample=True, temperature=0.9, top_k=20, rng_seed=7)
    a, b = pipe.generate(PROMPT, config), pipe.generate(PROMPT, config)
    assert str(a) == str(b)  # seeded
    with pytest.raises(TypeError, match="no_such_field"):
        pipe.generate(PROMPT, no_such_field=1)
    assert str(pipe.generate(PROMPT, {"max_new_tokens": 12})) == sprout_run(PROMPT, 12)


def test_list_of_prompts(pipe):
    r = pipe.generate([PROMPT, "The cat"], max_new_tokens=8)
    assert r.texts == [sprout_run(PROMPT, 8), sprout_run("The cat", 8)]
    assert r.perf_metrics.get_num_generated_tokens() == 16


def test_tokenized_inputs(pipe):
    enc = pipe.get_tokenizer().encode([PROMPT, "The cat"])
    r = pipe.generate(enc, max_new_tokens=8)
    assert isinstance(r, sprout.EncodedResults)
    assert r.tokens == pipe.generate([PROMPT, "The cat"], max_new_tokens=8).tokens
    assert r.perf_metrics.get_num_generated_tokens() == 16


def test_library_struct_layout():
    """The ctypes mirror of sprout_generation_config reads the library's
    defaults at the right offsets."""
    room = ctypes.create_string_buffer(4096)
    _lib.lib().sprout_generation_config_init(room)
    c = _lib.GenerationConfigStruct.from_buffer_copy(room.raw[: ctypes.sizeof(_lib.GenerationConfigStruct)])
    assert c.struct_size >= ctypes.sizeof(_lib.GenerationConfigStruct)
    assert (c.max_new_tokens, c.top_k, c.repeat_last_n, c.seed) == (256, 40, 64, 42)
    assert c.temperature == pytest.approx(0.8) and c.top_p == pytest.approx(0.95)
    assert (c.typical_p, c.mirostat_tau, c.dry_base) == pytest.approx((1.0, 5.0, 1.75))
    assert (c.dry_allowed_length, c.dry_penalty_last_n) == (2, -1)
    assert (c.xtc_threshold, c.top_n_sigma) == pytest.approx((0.1, -1.0))
    assert not c.samplers and not c.grammar and not c.grammar_trigger
    assert (c.context_shift, c.n_keep) == (False, 0)


def test_context_shift_goes_past_the_context():
    """Past a full context the generation ends, or with context_shift
    drops half of it and goes on to max_new_tokens."""
    n_ctx = 128
    with sprout.LLMPipeline(MODEL, "CPU", n_ctx=n_ctx) as small:
        plain = small.generate(PROMPT, max_new_tokens=n_ctx + 64, ignore_eos=True)
        assert plain.finish_reasons == ["length"] and len(plain.tokens[0]) < n_ctx
        shifted = small.generate(PROMPT, max_new_tokens=n_ctx + 64, ignore_eos=True, context_shift=True, n_keep=-1)
    assert len(shifted.tokens[0]) == n_ctx + 64
    assert shifted.tokens[0][: len(plain.tokens[0])] == plain.tokens[0]


def test_streamer_pieces_join_to_text(pipe):
    pieces = []
    r = pipe.generate(PROMPT, max_new_tokens=N, streamer=lambda piece: pieces.append(piece))
    assert len(pieces) > 1 and "".join(pieces) == str(r)


def test_stream_iterator(pipe):
    s = pipe.stream(PROMPT, max_new_tokens=N)
    pieces = list(s)
    assert "".join(pieces) == sprout_run(PROMPT, N) == str(s.result)
    chunks = list(pipe.create_completion(PROMPT, max_tokens=N, temperature=0, stream=True))
    assert "".join(c["choices"][0]["text"] for c in chunks) == sprout_run(PROMPT, N)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_stream_closed_early_stops(pipe):
    # no end of text before the context's end: only close() can end it early
    s = pipe.stream(PROMPT, max_new_tokens=400, ignore_eos=True)
    first = next(s)
    s.close()
    assert s.result.finish_reasons == ["stopped"]
    assert s.result.texts[0].startswith(first)
    assert s.result.perf_metrics.get_num_generated_tokens() < 400


@pytest.mark.parametrize("answer, reason", [(sprout.StreamingStatus.STOP, "stopped"), (True, "stopped"),
                                            (sprout.StreamingStatus.CANCEL, "cancelled")])
def test_stop_and_cancel_from_callback(pipe, answer, reason):
    pieces = []

    def streamer(piece):
        pieces.append(piece)
        return answer if len(pieces) == 3 else sprout.StreamingStatus.RUNNING

    r = pipe.generate(PROMPT, max_new_tokens=N, streamer=streamer)
    assert len(pieces) == 3
    assert r.finish_reasons == [reason]
    assert r.perf_metrics.get_num_generated_tokens() < N


def test_streamer_exception_is_raised(pipe):
    def streamer(piece):
        raise ValueError("from the streamer")

    with pytest.raises(ValueError, match="from the streamer"):
        pipe.generate(PROMPT, max_new_tokens=N, streamer=streamer)
    assert str(pipe.generate(PROMPT, max_new_tokens=8)) == sprout_run(PROMPT, 8)


def test_chat_reuses_the_cache(pipe):
    pipe.start_chat("You tell stories.")
    try:
        first = pipe.generate("Tell me a story.", max_new_tokens=16)
        second = pipe.generate("And then?", max_new_tokens=16)
        # the whole first turn (its prompt and reply) came from the cache
        assert second.perf_metrics.get_num_cached_tokens() >= first.perf_metrics.get_num_input_tokens()
        assert second.perf_metrics.get_num_input_tokens() > first.perf_metrics.get_num_input_tokens() + 8
        history = pipe.get_chat_history()
        assert [m["role"] for m in history] == ["system", "user", "assistant", "user", "assistant"]
        assert history[2]["content"] == first.texts[0]
        # a cancelled turn leaves no trace
        pipe.generate("Again.", max_new_tokens=16, streamer=lambda piece: sprout.StreamingStatus.CANCEL)
        assert len(pipe.get_chat_history()) == 5
    finally:
        pipe.finish_chat()
    assert str(pipe.generate(PROMPT, max_new_tokens=8)) == sprout_run(PROMPT, 8)


def test_tokenizer(pipe):
    tok = pipe.get_tokenizer()
    enc = tok.encode([PROMPT, "The cat sat"])
    assert enc.input_ids[0][0] == tok.get_bos_token_id()
    assert tok.decode(enc) == [PROMPT, "The cat sat"]
    assert tok.decode(enc.input_ids[0]) == PROMPT
    assert sum(enc.attention_mask[1]) == len([t for t in tok.encode("The cat sat").input_ids[0]])
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True,
                                   chat_template="chatml")
    assert text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"


def test_errors_carry_the_message():
    with pytest.raises(sprout.SproutError) as e:
        sprout.LLMPipeline("/no/such/model.gguf")
    assert e.value.status_name == "not found" and "/no/such/model.gguf" in str(e.value)
    with pytest.raises(sprout.SproutError) as e:
        sprout.LLMPipeline(MODEL, n_threads=100000)
    assert e.value.status == 8 and "100000" in e.value.message
    with pytest.raises(sprout.SproutError, match="CPU"):
        sprout.LLMPipeline(MODEL, "GPU")
    with pytest.raises(TypeError, match="NO_SUCH_PROPERTY"):
        sprout.LLMPipeline(MODEL, NO_SUCH_PROPERTY=1)
    with pytest.raises(TypeError, match="NO_SUCH_PROPERTY"):
        sprout.LLMPipeline(MODEL, config={"CACHE_DIR": "cache", "NO_SUCH_PROPERTY": 1})
    with pytest.raises(sprout.SproutError) as e:
        sprout.LLMPipeline(MODEL, config={"INFERENCE_NUM_THREADS": 100000})
    assert "100000" in e.value.message


def test_bad_generation_arguments(pipe):
    with pytest.raises(sprout.SproutError, match="beam search"):
        pipe.generate(PROMPT, num_beams=4)
    with pytest.raises(sprout.SproutError) as e:
        pipe.generate(PROMPT, grammar="root ::= (")
    assert e.value.status_name == "format error" and e.value.message
    with pytest.raises(sprout.SproutError, match="samplers|unknown"):
        pipe.generate(PROMPT, samplers="no_such_sampler")


def test_missing_library_is_a_clear_error():
    env = dict(os.environ, SPROUT_LIBRARY="/no/such/libsprout.so")
    code = "import sprout\ntry:\n    sprout.library_version()\nexcept sprout.SproutError as e:\n    print(e)\n"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert "SPROUT_LIBRARY" in out.stdout and "/no/such/libsprout.so" in out.stdout


def test_two_threads_one_scheduler(pipe):
    prompts = [PROMPT, "The little dog", "Lily and Ben", "One day"]
    expected = {p: str(pipe.generate(p, max_new_tokens=24)) for p in prompts}
    results, streamed, errors = {}, {}, []

    with sprout.Scheduler(pipe, n_slots=2) as scheduler:
        def client(mine):
            try:
                requests = []
                for p in mine:
                    streamed[p] = []
                    requests.append((p, scheduler.submit(p, max_new_tokens=24, streamer=streamed[p].append)))
                for p, request in requests:
                    results[p] = str(request.result())
                    request.close()
            except BaseException as e:  # noqa: B902 - reported below
                errors.append(e)

        threads = [threading.Thread(target=client, args=(prompts[i::2],)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        stats = scheduler.stats()
    assert results == expected
    assert all("".join(streamed[p]) == expected[p] for p in prompts)
    assert stats["requests_done"] == 4 and stats["generated_tokens"] == 4 * 24


def test_scheduler_cancel_and_chat_messages(pipe):
    with sprout.Scheduler(MODEL, n_slots=1) as scheduler:
        request = scheduler.submit(PROMPT, max_new_tokens=200, streamer=lambda piece: None)
        request.cancel()
        r = request.result()
        assert r.finish_reasons == ["cancelled"] and r.perf_metrics.get_num_generated_tokens() < 200
        request.close()
        pieces = []
        r = scheduler.generate(PROMPT, max_new_tokens=200, streamer=lambda piece: pieces.append(piece) or (
            sprout.StreamingStatus.CANCEL if len(pieces) == 3 else sprout.StreamingStatus.RUNNING))
        assert len(pieces) == 3 and r.finish_reasons == ["cancelled"]
        chat = scheduler.generate([{"role": "user", "content": "Hi"}], max_new_tokens=8)
        pipe.start_chat()
        try:
            assert str(chat) == str(pipe.generate("Hi", max_new_tokens=8))
        finally:
            pipe.finish_chat()


def test_chat_example(pipe):
    """examples/python/chat.py answers each line as the pipeline's chat does."""
    example = os.path.join(os.environ["SPROUT_SOURCE_DIR"], "examples", "python", "chat.py")
    out = subprocess.run([sys.executable, example, MODEL, "--max-new-tokens", "12", "--metrics"],
                         input="Hi\nAnd then?\n", capture_output=True, text=True, check=True, timeout=60)
    pipe.start_chat()
    try:
        replies = [str(pipe.generate(m, max_new_tokens=12)) for m in ("Hi", "And then?")]
    finally:
        pipe.finish_chat()
    assert out.stdout == "".join(r + "\n" for r in replies)
    assert out.stderr.count("cached") == 2
