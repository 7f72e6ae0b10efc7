"""``--verify``: a sample spread over the input re-encoded with the reference engine, beside the
run, in a process of its own; any difference stops the run.

What is checked, and how much, is :mod:`toktools.corpus.verify_sample`'s business: a byte budget
priced in the time of the run. This module carries the texts to the checker and compares.

Building the reference (its modules, its merge table) costs about as much as encoding 5 MB
with tiktoken, so it is not done in the encoding process: a forked checker
(:class:`CheckerProcess`) builds it while the main process encodes, receives the sampled texts,
and sends back the reference's ids. The checker is forked as soon as the tokenizer is read
(:func:`start_checker`), so that its build overlaps the main process's own preparation (output
checks, input checksums, the engine), which leaves the second core idle. The main process
compares the answers with what its engine gave and stops at the first difference. It waits for
every answer before it commits an output (:meth:`Verifier.sync`), so a difference still leaves
no output behind.

**Why it cannot deadlock.** The pipe to the checker is used in strict turns by one thread of
this process, the courier (:func:`_carry`): it sends one request, then reads its whole answer,
then takes the next request. The checker reads a whole request, then writes its whole answer.
So at any moment at most one end writes, and the other end is reading or about to: both can
never wait on a full buffer at once, whatever the sizes and the timing. The main thread never
touches the pipe: it queues requests and picks up answers (:class:`CheckerProcess`), so its
encoding never waits on the checker either, except at :meth:`Verifier.sync`. And no message is
unbounded: a request holds at most :data:`REQUEST_BYTES` of text (or one text, itself at most
:data:`toktools.corpus.verify_sample.MAX_WHOLE_CHARS` characters), an answer the ids of that.
(Before, the main thread sent a batch's sample while the checker was still writing the answer
to the previous one; with long documents both buffers filled and both ends waited forever.)
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from toktools.corpus.verify_sample import TIME_SHARE, Piece, Sample
from toktools.errors import ToktoolsError

if TYPE_CHECKING:
    from toktools.engines.base import DocumentSource

#: Text per request to the checker, at most (one longer text goes alone).
REQUEST_BYTES = 64 << 10
#: Inputs up to this size (bytes) get a :class:`CheckerThread` when they can: measured, 5 MB of
#: long documents (GPT-2, tiktoken: the checker's fixed costs against a ~0.45 s run) gains from
#: the thread, and 100 MB loses (tiktoken 1.19x the CPU of ``--verify 0``, 1.37x the wall time,
#: against 1.14x / 0.94x forked): there the checker's share is ~0.5 s of pure Python holding the
#: GIL, which the engine's threads then wait for. Standard input (size unknown) is forked too.
THREAD_MAX_BYTES = 16 << 20
#: Seconds a run's end waits for the checker thread to keep its words (a few ms; a stuck disk
#: must not hold the run).
KEEP_WORDS_WAIT = 5.0


def _build_reference(document: Any, fingerprint: str | None = None) -> tuple[Any, str]:
    """The reference engine, or why it cannot be built (one line). ``document`` may be a
    :data:`toktools.engines.base.DocumentSource`: with a ``fingerprint`` whose built tokenizer is in
    the user cache (:mod:`toktools.engines.reference_cache`), it is never read. For byte-level
    BPE, once a run has kept the ids-only path's state (:mod:`toktools.engines.reference_ids`),
    that state alone is loaded: the whole reference is built only for the texts it does not
    cover."""
    try:
        if fingerprint:
            from toktools.engines.reference_ids import cached_reference_ids

            lean = cached_reference_ids(fingerprint, partial(_whole_reference, document, fingerprint))
            if lean is not None:
                return lean, ""
        reference = _whole_reference(document, fingerprint)
        if fingerprint and reference.fast is not None:
            from toktools.engines.reference_ids import remember_reference_ids

            remember_reference_ids(fingerprint, reference.fast)
        return reference, ""
    except ToktoolsError as err:
        return None, str(err)
    except Exception as err:  # a bug must still reach the user as one line
        return None, f"the reference engine cannot be built for --verify ({type(err).__name__}: {err})"


def _whole_reference(document: Any, fingerprint: str | None) -> Any:
    from toktools.engines.reference import ReferenceEngine

    return ReferenceEngine(document, workers=1, fingerprint=fingerprint)


def _answer(
    reference: Any, problem: str, texts: list[str], clock: Callable[[], float] = time.process_time
) -> tuple[Any, float]:
    """The reference's ids for ``texts`` (or the line saying why there are none), and the CPU
    seconds it took on ``clock`` (the time budget's measure of the checker's speed)."""
    if reference is None:
        return problem, 0.0
    started = clock()
    try:
        # a few texts: the ids-only path text by text, whose new words are merged as they are
        # met; its batch call would set up bulk merges (numpy's import and tables, ~0.1 s) for them
        fast = getattr(reference, "fast", None)
        if fast is not None and getattr(reference, "name", None) == "reference":
            ids: Any = [fast.encode(text) for text in texts]
        else:
            ids = reference.encode_batch(texts)
    except Exception as err:
        return f"the reference engine failed during --verify ({type(err).__name__}: {err})", 0.0
    return ids, clock() - started


#: Builds what the checker answers with: ``(reference, "")``, or ``(None, why not)``.
Build = Callable[[Any], tuple[Any, str]]


def _checker(conn: Any, other_end: Any, document: Any, parent: int, build: Build) -> None:
    """The checker process: for each request (a list of texts), one answer: the reference's ids
    and the seconds they took (and, the first time, the seconds the build took), or one line
    saying why the reference cannot run. It reads a
    whole request before it writes, and writes a whole answer before it reads again."""
    import gc
    import signal

    from toktools.runtime.workers import worker_init

    other_end.close()  # the parent's end: with it closed here, the parent's death is our EOF
    worker_init(parent)  # Ctrl-C and SIGTERM are the parent's business; die with the parent
    # the parent's wakeup fd (toktools.runtime.interrupts) is not ours: a signal here would tell the
    # parent's watcher that the parent was terminated
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:
        pass
    # the build makes ~10^5 containers: with the collector on, its full passes over them (and
    # over the parent's heap inherited by the fork) cost a third of the build
    gc.freeze()
    gc.disable()
    # the document may be a DocumentSource: read by the build if it needs it (after a cached
    # start-up, which did not read it), never when the built reference is cached
    started = time.process_time()
    reference, problem = build(document)
    build_seconds = time.process_time() - started  # part of what checking costs: told once
    gc.freeze()
    gc.enable()
    while True:
        try:
            texts = conn.recv()
        except (EOFError, OSError):
            return
        if texts is None:
            return
        try:
            conn.send((*_answer(reference, problem, texts), build_seconds))
            build_seconds = 0.0
        except (EOFError, OSError):
            return


class InlineChecker:
    """The checker's answers computed in this process, where forking one is not possible or
    not worth it (a Dask worker encoding one block: it keeps :attr:`reference` for the next)."""

    in_process = True

    def __init__(self, document: dict[str, Any], reference: Any = None) -> None:
        self.document = document
        self.reference = reference
        self._problem = ""
        self._answers: deque[Any] = deque()

    def send(self, texts: list[str]) -> None:
        build_seconds = 0.0
        if self.reference is None and not self._problem:
            started = time.process_time()
            self.reference, self._problem = _build_reference(self.document)
            build_seconds = time.process_time() - started
        self._answers.append((*_answer(self.reference, self._problem, texts), build_seconds))

    def poll(self) -> bool:
        return bool(self._answers)

    def recv(self) -> Any:
        return self._answers.popleft()

    def close(self) -> None:
        self._answers.clear()


#: What the courier hands on when the checker has gone (its pipe closed or broken).
_GONE = object()


class CheckerThread:
    """The checker as a thread of this process, where its reference loads in milliseconds
    (the ids-only state of byte-level BPE, :mod:`toktools.engines.reference_ids`): a forked
    checker costs more than that state's load and the 64 KB it checks on a short run (the
    fork, the copies on write it makes in this process as both touch their heaps, the texts and
    ids through a pipe: ~0.03 s of ~0.1 s at 5 MB), and the engines beside it (tiktoken,
    gigatoken, ``tokenizers``) encode without the GIL. The thread starts on the first request
    (after the engine is built, so nothing forks while it runs), builds, then answers each
    request in turn. Its seconds are the thread's own CPU time (``in_process``: the verifier
    takes them out of the run's). It never leaves a request unanswered: anything that ends
    it early hands on :data:`_GONE`, so :meth:`recv` raises instead of waiting forever. Closed
    with every answer read, it keeps the words it merged for the next run
    (:meth:`toktools.engines.reference_ids.ReferenceIds.keep_words`) before it ends."""

    in_process = True

    def __init__(self, build: Callable[[], tuple[Any, str]]) -> None:
        import queue

        self._build = build
        self._requests: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        self._answers: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: Any = None
        self._closed = False
        self._unanswered = 0  # requests sent whose answer has not been read

    def send(self, texts: list[str]) -> None:
        if self._thread is None:
            import threading

            self._thread = threading.Thread(target=self._serve, name="toktools-verify", daemon=True)
            self._thread.start()
        self._unanswered += 1
        self._requests.put(texts)

    def _serve(self) -> None:
        # the collector paused while the state loads and words merge (~10^5 tuples, no cycle):
        # with it on, its passes over them, and the full one they set off over this process's
        # heap, cost as much as the checking itself
        from toktools.runtime.gc_pause import gc_paused

        try:
            started = time.thread_time()
            with gc_paused():
                reference, problem = self._build()
            build_seconds = time.thread_time() - started
            while not self._closed:
                texts = self._requests.get()
                if self._closed:
                    return
                if texts is None:  # closed with every answer read: a run that went through
                    keep_words = getattr(reference, "keep_words", None)
                    if keep_words is not None:
                        keep_words()
                    return
                with gc_paused():
                    answer = _answer(reference, problem, texts, time.thread_time)
                self._answers.put((*answer, build_seconds))
                build_seconds = 0.0
        except Exception:  # noqa: BLE001 - a bug: the run hears that the checker has gone, no traceback here
            pass
        finally:
            self._answers.put(_GONE)  # after the last answer: only a recv past it sees it

    def poll(self) -> bool:
        return not self._answers.empty()

    def recv(self) -> Any:
        answer = _next_answer(self._answers, "the --verify checker has gone")
        self._unanswered -= 1
        return answer

    def close(self) -> None:
        """With every answer read: the thread keeps its words and ends (waited for, at most
        :data:`KEEP_WORDS_WAIT` seconds). Otherwise (the run failed) it stops answering and
        ends after the request it is on, unwaited (a daemon: it never keeps the process alive)."""
        if self._thread is None:
            return
        if self._unanswered:
            self._closed = True
        self._requests.put(None)
        if not self._closed:
            self._thread.join(timeout=KEEP_WORDS_WAIT)
        self._closed = True


def _next_answer(answers: Any, gone: str) -> Any:
    """The next answer of a checker (thread or process); :class:`EOFError` (``gone``) once it
    has gone, for this call and every later one."""
    answer = answers.get()
    if answer is _GONE:
        answers.put(_GONE)
        raise EOFError(gone)
    return answer


def _carry(conn: Any, requests: Any, answers: Any) -> None:
    """The courier thread: each request sent whole, then its answer read whole, in turn (see
    the module docstring); ``None`` ends it. A closed or broken pipe hands on :data:`_GONE`."""
    while True:
        texts = requests.get()
        if texts is None:
            return
        try:
            conn.send(texts)
            answer = conn.recv()
        except (EOFError, OSError):
            answers.put(_GONE)
            return
        answers.put(answer)


class CheckerProcess:
    """The forked checker: it starts building the reference at once, then answers requests
    (``send`` texts, ``recv`` their answer) until closed. Fork it before this process starts any
    thread (the engines' pools). ``build`` makes what answers (default: the reference engine's
    ids).

    ``send`` never blocks: it queues the texts for the courier thread (:func:`_carry`, started on
    the first request), which alone uses the pipe, in strict turns. ``poll`` says whether an
    answer has arrived; ``recv`` waits for the next one."""

    def __init__(self, document: DocumentSource, build: Build | None = None) -> None:
        import multiprocessing
        import os
        import queue

        context = multiprocessing.get_context("fork")
        ours, theirs = context.Pipe()
        self._process: Any = context.Process(
            target=_checker, args=(theirs, ours, document, os.getpid(), build or _build_reference), daemon=True
        )
        try:
            self._process.start()
        except OSError as err:
            theirs.close()
            ours.close()
            raise ToktoolsError(f"cannot start the --verify process ({err.strerror or err}); use --verify 0") from None
        theirs.close()
        self._conn = ours
        self._requests: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        self._answers: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._courier: Any = None

    def send(self, texts: list[str]) -> None:
        if self._courier is None:
            import threading

            self._courier = threading.Thread(
                target=_carry, args=(self._conn, self._requests, self._answers), name="toktools-verify", daemon=True
            )
            self._courier.start()
        self._requests.put(texts)

    def poll(self) -> bool:
        return not self._answers.empty()

    def recv(self) -> Any:
        return _next_answer(self._answers, "the --verify process has gone")

    def close(self) -> None:
        """Stop the checker at once: every answer that matters has been read (or the run
        failed), and it may still be building the reference. Killing it ends the courier too
        (its pipe reads end of file)."""
        if self._process is None:
            return
        self._requests.put(None)
        self._process.kill()  # SIGKILL: no handler of the parent's runs in the child
        self._process.join()
        self._process = None
        if self._courier is not None:
            self._courier.join(timeout=10)
        self._conn.close()


def start_checker(
    document: Any,
    count: int,
    engine_name: str,
    build: Build | None = None,
    fingerprint: str | None = None,
    input_bytes: int | None = None,
) -> CheckerProcess | CheckerThread | None:
    """The checker for a run of ``engine_name`` that verifies with ``count`` places (``--verify
    N``), forked now; None when there is nothing to check (``count`` 0, or the reference
    checking itself). ``fingerprint`` names the document, for the default build (see
    :func:`_build_reference`); with its ids-only state kept and ``input_bytes`` at most
    :data:`THREAD_MAX_BYTES`, the checker is a :class:`CheckerThread` instead (started later)."""
    if count <= 0 or engine_name == "reference":
        return None
    if build is None and fingerprint and input_bytes is not None and input_bytes <= THREAD_MAX_BYTES:
        from toktools.engines.reference_ids import has_state

        if has_state(fingerprint):  # it loads in milliseconds: no process of its own (CheckerThread)
            return CheckerThread(partial(_build_reference, document, fingerprint))
    return CheckerProcess(document, build or partial(_build_reference, fingerprint=fingerprint))


class _Texts(Sequence[str]):
    """The texts of a batch's items, each read when the sample first looks at it: the sample
    looks at a few places, and the block path's items decode their document on access (all of
    a block's candidates decoded each time were ~5 MB per 5 MB of long documents)."""

    def __init__(self, batch: Sequence[Any]) -> None:
        self.batch = batch
        self._read: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self.batch)

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        text = self._read.get(index)
        if text is None:
            text = self._read[index] = self.batch[index].text
        return text


class Verifier:
    """Has the checker re-encode a sample of what the engine encoded (no checker for the
    reference engine itself or ``count=0``) and compares, stopping at the first difference.

    The sample (:class:`toktools.corpus.verify_sample.Sample`): at least 64 KB from ``count``
    places spread over the input's ``total`` bytes, more while the checker's time stays within
    ``share`` of the run's. The items checked have ``text``, ``source`` (an index into
    ``sources``) and ``line``; the results compared are id lists (documents; with ``cuttable``,
    a prefix of a document against the first ids of its list) or output lines (``str``, the
    text formats). :attr:`done` counts the texts checked, :attr:`bytes_checked` their bytes."""

    def __init__(
        self,
        engine_name: str,
        document: DocumentSource,
        count: int,
        total: int,
        sources: Sequence[Any],
        inline: InlineChecker | None = None,
        process: CheckerProcess | CheckerThread | None = None,
        build: Build | None = None,
        *,
        cuttable: bool = False,
        min_bytes: int | None = None,
        share: float = TIME_SHARE,
        clock: Callable[[], float] = time.process_time,
    ) -> None:
        """``inline``: check in this process with that checker instead of a forked one;
        ``process``: a checker forked earlier (:func:`start_checker`), closed with the verifier;
        ``build``: what a checker forked later answers with (as :class:`CheckerProcess`);
        ``cuttable``: documents may be checked on a prefix (see :mod:`toktools.corpus.verify_sample`);
        ``min_bytes``: the smallest sample (default: 64 KB, or 1 KB per place); ``share``: of
        the run's time (on ``clock``, from now) the checker may take."""
        self.inline = inline
        self.build = build
        self.active = count > 0 and engine_name != "reference"
        self.engine_name = engine_name
        self.document = document
        self.count = count
        self.sources = sources
        self.share = share
        self.sample = Sample(count, total, cuttable=cuttable, min_bytes=min_bytes)
        self.done = 0
        self.bytes_checked = 0
        self._clock = clock
        self._started = clock()
        self._waiting: deque[list[tuple[Any, Any, Piece]]] = deque()
        self._outstanding = 0  # bytes sent and not answered yet
        self._checker_seconds = 0.0
        self._build_seconds = 0.0  # the checker's start-up: part of the cost, spent once
        self._answered = 0  # bytes answered (the checker's speed: _answered / _checker_seconds)
        self._conn: Any = None
        if process is not None and not self.active:
            process.close()  # forked for nothing (the engine turned out to be the reference)
        elif process is not None:
            self._conn = process

    @property
    def sent(self) -> int:
        """Texts sent to the checker so far."""
        return self.sample.sent_pieces

    def start(self) -> None:
        """Fork the checker (unless it runs inline or was forked earlier), which starts
        building the reference at once."""
        if not self.active or self._conn is not None:
            return
        self._conn = self.inline if self.inline is not None else CheckerProcess(self.document, self.build)

    def check(self, batch: Sequence[Any], ids: Sequence[Any], bytes_done: int) -> None:
        """Send this batch's share of the sample; read any answers that have arrived. Never
        waits for the checker."""
        if not self.active:
            return
        self._collect(block=False)
        pieces = self.sample.pieces(_Texts(batch), bytes_done, self._budget_bytes())
        if not pieces:
            return
        self.start()
        for request in _requests(pieces):
            self._conn.send([piece.text for piece in request])
            self._waiting.append([(batch[p.index], ids[p.index], p) for p in request])
            self._outstanding += sum(p.size for p in request)
        self._collect(block=False)

    def _budget_bytes(self) -> float:
        """The bytes the time budget allows in all so far: what the checker can answer, at its
        measured speed, in ``share`` of the time since the encoding started less the time its
        start-up took; 0 while the speed is unknown or the checker has more than one request to
        catch up on (so the last answers never keep the run waiting long)."""
        if self._checker_seconds <= 0 or self._outstanding > REQUEST_BYTES:
            return 0.0
        speed = self._answered / self._checker_seconds
        run = self._clock() - self._started
        if getattr(self._conn, "in_process", False):  # the clock counts the checker's own time too
            run -= self._checker_seconds + self._build_seconds
        return max(0.0, self.share * run - self._build_seconds) * speed

    def sync(self) -> None:
        """Wait for every answer (before an output is committed); raise at a difference."""
        self._collect(block=True)

    def _collect(self, block: bool) -> None:
        while self._waiting and (block or self._conn.poll()):
            try:
                answer, seconds, build_seconds = self._conn.recv()
            except (EOFError, OSError):
                raise ToktoolsError("the --verify process stopped unexpectedly; run again, or use --verify 0") from None
            sent = self._waiting.popleft()
            size = sum(piece.size for _, _, piece in sent)
            self._outstanding -= size
            if isinstance(answer, str):
                if self.engine_name == "tokenizers":  # it is the yardstick the reference is checked against
                    self.active = False
                    self._waiting.clear()
                    return
                raise ToktoolsError(answer)
            self._checker_seconds += seconds
            self._build_seconds += build_seconds
            self._answered += size
            for (item, got, piece), want in zip(sent, answer):
                self._compare(item, got, piece, want)
                self.done += 1
                self.bytes_checked += piece.size

    def _compare(self, item: Any, got: Any, piece: Piece, want: Any) -> None:
        """Raise at a difference: the whole result, or for a prefix the first ids of the
        document's (the prefix ends where the ids cannot change, so they are the same)."""
        want = _as_list(want)
        if piece.whole:
            got = _as_list(got)
            if got == want:
                return
        else:  # only the first ids (the engine's may be an array of a whole piece of a long line)
            got = _as_list(got[: len(want)])
            if got == want:
                return
        at = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        if isinstance(got, str):  # an output line
            where = f"line {item.line} (character {at}: {got[at : at + 16]!r} vs {want[at : at + 16]!r})"
        else:
            where = f"document at line {item.line} (token {at}: {got[at : at + 1]} vs {want[at : at + 1]})"
        path = self.sources[item.source].path
        raise ToktoolsError(
            f"engine {self.engine_name} disagrees with the reference on "
            f"{'standard input' if path == '-' else path}, "
            f"{where}; use --engine reference (and please report it)"
        )

    def close(self) -> None:
        """Stop the checker at once (see :meth:`CheckerProcess.close`)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _as_list(ids: Any) -> Any:
    """Ids (a list, an array, any sequence) or an output line, as a list or the ``str``."""
    if isinstance(ids, (list, str)):
        return ids
    tolist = getattr(ids, "tolist", None)
    return tolist() if tolist is not None else list(ids)


def _requests(pieces: list[Piece]) -> Iterator[list[Piece]]:
    """The pieces grouped into requests of at most :data:`REQUEST_BYTES` (a longer piece alone)."""
    request: list[Piece] = []
    size = 0
    for piece in pieces:
        if request and size + piece.size > REQUEST_BYTES:
            yield request
            request, size = [], 0
        request.append(piece)
        size += piece.size
    if request:
        yield request
