"""``--verify N``: documents spread over the input re-encoded with the reference engine, beside
the run, in a process of its own.

Building the reference (its modules, its merge table) costs about as much as encoding 5 MB
with tiktoken, so it is not done in the encoding process: a forked checker
(:class:`CheckerProcess`) builds it while the main process encodes, receives the sampled texts,
and sends back the reference's ids. The checker is forked as soon as the tokenizer is read
(:func:`start_checker`), so that its build overlaps the main process's own preparation (output
checks, input checksums, the engine), which leaves the second core idle. The main process
compares the answers with what its engine gave and stops at the first difference. It waits for
every answer before it commits an output (:meth:`Verifier.sync`), so a difference still leaves
no output behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from toktools.errors import ToktoolsError

if TYPE_CHECKING:
    from toktools.engines.base import DocumentSource

VERIFY_MAX_CHARS = 1 << 18
VERIFY_PREFERRED_CHARS = 4096


def _build_reference(document: Any, fingerprint: str | None = None) -> tuple[Any, str]:
    """The reference engine, or why it cannot be built (one line). ``document`` may be a
    :data:`toktools.engines.base.DocumentSource`: with a ``fingerprint`` whose built tokenizer is in
    the user cache (:mod:`toktools.engines.reference_cache`), it is never read."""
    try:
        from toktools.engines.reference import ReferenceEngine

        return ReferenceEngine(document, workers=1, fingerprint=fingerprint), ""
    except ToktoolsError as err:
        return None, str(err)
    except Exception as err:  # a bug must still reach the user as one line
        return None, f"the reference engine cannot be built for --verify ({type(err).__name__}: {err})"


def _answer(reference: Any, problem: str, texts: list[str]) -> Any:
    """The reference's ids for ``texts``, or the line saying why there are none."""
    if reference is None:
        return problem
    try:
        # a few texts: the ids-only path text by text, whose new words are merged as they are
        # met; its batch call would set up bulk merges (numpy's import and tables, ~0.1 s) for them
        fast = getattr(reference, "fast", None)
        if fast is not None and getattr(reference, "name", None) == "reference":
            return [fast.encode(text) for text in texts]
        return reference.encode_batch(texts)
    except Exception as err:
        return f"the reference engine failed during --verify ({type(err).__name__}: {err})"


#: Builds what the checker answers with: ``(reference, "")``, or ``(None, why not)``.
Build = Callable[[Any], tuple[Any, str]]


def _checker(conn: Any, document: Any, parent: int, build: Build) -> None:
    """The checker process: the reference's ids for each list of texts received, or one line
    saying why the reference cannot run (then for every request)."""
    import gc
    import signal

    from toktools.runtime.workers import worker_init

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
    reference, problem = build(document)
    gc.freeze()
    gc.enable()
    while True:
        try:
            texts = conn.recv()
        except (EOFError, OSError):
            return
        if texts is None:
            return
        conn.send(_answer(reference, problem, texts))


class InlineChecker:
    """The checker's answers computed in this process, where forking one is not possible or
    not worth it (a Dask worker encoding one block: it keeps :attr:`reference` for the next)."""

    def __init__(self, document: dict[str, Any], reference: Any = None) -> None:
        self.document = document
        self.reference = reference
        self._problem = ""
        self._answers: list[Any] = []

    def send(self, texts: list[str]) -> None:
        if self.reference is None and not self._problem:
            self.reference, self._problem = _build_reference(self.document)
        self._answers.append(_answer(self.reference, self._problem, texts))

    def poll(self) -> bool:
        return bool(self._answers)

    def recv(self) -> Any:
        return self._answers.pop(0)

    def close(self) -> None:
        self._answers.clear()


class CheckerProcess:
    """The forked checker: it starts building the reference at once, then answers requests
    (``send`` texts, ``recv`` their ids) until closed. Fork it before this process starts any
    thread (the engines' pools). ``build`` makes what answers (default: the reference engine's
    ids)."""

    def __init__(self, document: DocumentSource, build: Build | None = None) -> None:
        import multiprocessing
        import os

        context = multiprocessing.get_context("fork")
        ours, theirs = context.Pipe()
        self._process: Any = context.Process(
            target=_checker, args=(theirs, document, os.getpid(), build or _build_reference), daemon=True
        )
        try:
            self._process.start()
        except OSError as err:
            theirs.close()
            ours.close()
            raise ToktoolsError(f"cannot start the --verify process ({err.strerror or err}); use --verify 0") from None
        theirs.close()
        self._conn = ours

    def send(self, texts: list[str]) -> None:
        self._conn.send(texts)

    def poll(self) -> bool:
        return bool(self._conn.poll())

    def recv(self) -> Any:
        return self._conn.recv()

    def close(self) -> None:
        """Stop the checker at once: every answer that matters has been read (or the run
        failed), and it may still be building the reference."""
        if self._process is None:
            return
        self._conn.close()
        self._process.kill()  # SIGKILL: no handler of the parent's runs in the child
        self._process.join()
        self._process = None


def start_checker(
    document: Any, count: int, engine_name: str, build: Build | None = None, fingerprint: str | None = None
) -> CheckerProcess | None:
    """The checker for a run of ``engine_name`` that verifies ``count`` documents, forked now;
    None when there is nothing to check (``count`` 0, or the reference checking itself).
    ``fingerprint`` names the document, for the default build (see :func:`_build_reference`)."""
    if count <= 0 or engine_name == "reference":
        return None
    return CheckerProcess(document, build or partial(_build_reference, fingerprint=fingerprint))


class Verifier:
    """Picks ``count`` documents at evenly spaced marks over the input bytes and has the
    checker process re-encode them (no checker for the reference engine itself or ``count=0``).

    The items checked have ``text``, ``source`` (an index into ``sources``) and ``line``; the
    results compared are id lists (documents) or output lines (``str``, the text formats)."""

    def __init__(
        self,
        engine_name: str,
        document: DocumentSource,
        count: int,
        total: int,
        sources: Sequence[Any],
        inline: InlineChecker | None = None,
        process: CheckerProcess | None = None,
        build: Build | None = None,
    ) -> None:
        """``inline``: check in this process with that checker instead of a forked one;
        ``process``: a checker forked earlier (:func:`start_checker`), closed with the verifier;
        ``build``: what a checker forked later answers with (as :class:`CheckerProcess`)."""
        self.inline = inline
        self.build = build
        self.active = count > 0 and engine_name != "reference"
        self.engine_name = engine_name
        self.document = document
        self.count = count
        self.sources = sources
        self.marks = [total * (k + 0.5) / count for k in range(count)] if total and count else None
        self.next_mark = 0
        self.sent = 0
        self.done = 0
        self._waiting: list[list[tuple[Any, Any]]] = []
        self._conn: Any = None
        if process is not None and not self.active:
            process.close()  # forked for nothing (the engine turned out to be the reference)
        elif process is not None:
            self._conn = process

    def start(self) -> None:
        """Fork the checker (unless it runs inline or was forked earlier), which starts
        building the reference at once."""
        if not self.active or self._conn is not None:
            return
        self._conn = self.inline if self.inline is not None else CheckerProcess(self.document, self.build)

    def check(self, batch: Sequence[Any], ids: Sequence[Any], bytes_done: int) -> None:
        """Send this batch's share of the sample; read any answers that have arrived."""
        if not self.active:
            return
        if self.sent < self.count:
            picks = self._picks(batch, bytes_done)
            if picks:
                self.start()
                self._conn.send([batch[i].text for i in picks])
                self._waiting.append([(batch[i], ids[i]) for i in picks])
                self.sent += len(picks)
        self._collect(block=False)

    def _picks(self, batch: Sequence[Any], bytes_done: int) -> list[int]:
        if self.marks is None:
            wanted = self.count - self.sent
        else:
            wanted = 0
            while self.next_mark < len(self.marks) and self.marks[self.next_mark] <= bytes_done:
                wanted += 1
                self.next_mark += 1
        if not wanted:
            return []
        picks: list[int] = []
        step = max(1, len(batch) // wanted)
        for start in range(0, len(batch), step):  # one document per window of the batch
            window = range(start, min(len(batch), start + step))
            # the reference is slow: prefer a document of ordinary length (64-4096 characters)
            ordinary = [i for i in window if 64 <= len(batch[i].text) <= VERIFY_PREFERRED_CHARS]
            index = ordinary[0] if ordinary else min(window, key=lambda i: len(batch[i].text))
            if len(batch[index].text) <= VERIFY_MAX_CHARS:
                picks.append(index)
            if len(picks) >= wanted:
                break
        return picks

    def sync(self) -> None:
        """Wait for every answer (before an output is committed); raise at a difference."""
        self._collect(block=True)

    def _collect(self, block: bool) -> None:
        while self._waiting and (block or self._conn.poll()):
            try:
                answer = self._conn.recv()
            except (EOFError, OSError):
                raise ToktoolsError("the --verify process stopped unexpectedly; run again, or use --verify 0") from None
            sent = self._waiting.pop(0)
            if isinstance(answer, str):
                if self.engine_name == "tokenizers":  # it is the yardstick the reference is checked against
                    self.active = False
                    self._waiting.clear()
                    return
                raise ToktoolsError(answer)
            for (segment, got), want in zip(sent, answer):
                if got != want:
                    at = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
                    if isinstance(got, str):  # an output line
                        where = f"line {segment.line} (character {at}: {got[at : at + 16]!r} vs {want[at : at + 16]!r})"
                    else:
                        where = (
                            f"document at line {segment.line} (token {at}: {got[at : at + 1]} vs {want[at : at + 1]})"
                        )
                    path = self.sources[segment.source].path
                    raise ToktoolsError(
                        f"engine {self.engine_name} disagrees with the reference on "
                        f"{'standard input' if path == '-' else path}, "
                        f"{where}; use --engine reference (and please report it)"
                    )
                self.done += 1

    def close(self) -> None:
        """Stop the checker at once (see :meth:`CheckerProcess.close`)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
