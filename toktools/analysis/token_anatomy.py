"""One token's anatomy (``toktools inspect TOK --token X``): its bytes, byte symbols, script,
flags and, for BPE, the merge tree that built it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toktools.analysis import token_view
from toktools.analysis.token_surface import hex_bytes, script_of_surface, surface_of
from toktools.errors import ToktoolsError
from toktools.models.bpe.bytelevel import BYTE_TO_SYMBOL, SYMBOL_TO_BYTE, text_to_symbols
from toktools.tokenizer import Tokenizer

__all__ = ["MergeNode", "TokenInfo", "merge_tree", "token_info"]


@dataclass
class MergeNode:
    """A node of a BPE merge tree. ``rank`` is the 0-based index of the merge that produced
    ``token`` in the merges list (line ``rank + 1`` of ``merges.txt`` after its header); leaves
    (no merge produced them: the byte symbols) have ``rank`` None and no children."""

    token: str
    id: int | None
    rank: int | None
    hex: str
    readable: str = ""
    left: MergeNode | None = None
    right: MergeNode | None = None

    @property
    def children(self) -> list[MergeNode]:
        return [c for c in (self.left, self.right) if c is not None]

    def leaves(self) -> list[MergeNode]:
        """The leaves from left to right (their tokens concatenate to this token)."""
        if not self.children:
            return [self]
        return [leaf for child in self.children for leaf in child.leaves()]

    def depth(self) -> int:
        return 1 + max((c.depth() for c in self.children), default=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "readable": self.readable,
            "id": self.id,
            "rank": self.rank,
            "hex": self.hex,
            "children": [c.to_dict() for c in self.children],
        }

    def render(self) -> str:
        """A plain-text tree, one node a line::

        ĠHello  id 18435  merge 18171  (20 48 65 6C 6C 6F)
        ├── ĠH  id 367  merge 258  (20 48)
        │   ├── Ġ  id 220  byte 20
        ...
        """
        lines: list[str] = []

        def label(node: MergeNode) -> str:
            ident = f"id {node.id}" if node.id is not None else "not in vocab"
            shown = f"{node.token}  «{node.readable}»" if node.readable and node.readable != node.token else node.token
            if node.rank is None:
                if len(node.token) == 1 and node.token in SYMBOL_TO_BYTE:
                    return f"{shown}  {ident}  byte {node.hex}"
                return f"{shown}  {ident}  (no merge)  ({node.hex})"
            return f"{shown}  {ident}  merge {node.rank}  ({node.hex})"

        def walk(node: MergeNode, lead: str, tail: str) -> None:
            lines.append(lead + label(node))
            children = node.children
            for index, child in enumerate(children):
                last = index == len(children) - 1
                walk(child, tail + ("└── " if last else "├── "), tail + ("    " if last else "│   "))

        walk(self, "", "")
        return "\n".join(lines)


@dataclass
class TokenInfo:
    """What ``toktools inspect TOK --token X`` shows about one token."""

    id: int
    token: str
    kind: str
    readable: str
    special: bool
    added: bool
    continuation: bool
    surface: str | None
    hex: str
    bytes: int
    chars: int | None
    byte_symbols: str
    script: str
    merge_tree: MergeNode | None
    note: str | None = None
    #: the model's score (Unigram log-probability); None for models without scores
    score: float | None = None
    #: a sentencepiece ``.model``'s piece type (``NORMAL``, ``CONTROL``, ``BYTE`` ...); else None
    piece_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "token": self.token,
            "kind": self.kind,
            "readable": self.readable,
            "special": self.special,
            "added": self.added,
            "continuation": self.continuation,
            "surface": self.surface,
            "hex": self.hex,
            "bytes": self.bytes,
            "chars": self.chars,
            "byte_symbols": self.byte_symbols,
            "script": self.script,
            "merge_tree": self.merge_tree.to_dict() if self.merge_tree is not None else None,
            "note": self.note,
            **({"score": self.score} if self.score is not None else {}),
            **({"piece_type": self.piece_type} if self.piece_type is not None else {}),
        }

    def render_plain(self) -> str:
        flags = [
            name
            for name, on in (("special", self.special), ("added", self.added), ("continuation", self.continuation))
            if on
        ]
        lines = [
            f"token         {self.token}" + (f"  ({', '.join(flags)})" if flags else ""),
            f"reads as      {self.readable}",
            f"id            {self.id}",
            f"surface       {self.surface!r}" if self.surface is not None else "surface       (partial UTF-8 bytes)",
            f"bytes         {self.hex}  ({self.bytes} bytes)",
        ]
        if self.piece_type is not None:
            lines.append(f"piece type    {self.piece_type}")
        else:  # byte symbols mean nothing to sentencepiece
            lines.append(f"byte symbols  {self.byte_symbols}")
        lines += [f"script        {self.script}"]
        if self.score is not None:
            lines.append(f"score         {self.score!r}")
        if self.note:
            lines.append(f"note          {self.note}")
        if self.merge_tree is not None:
            lines += ["", "merge tree", self.merge_tree.render()]
        return "\n".join(lines) + "\n"


def merge_tree(tokenizer: Tokenizer, token: str) -> MergeNode:
    """How BPE built ``token``: the merge ``(a, b)`` with ``a + b == token`` of lowest rank (the
    one that created it while training), then the same for ``a`` and ``b``, down to tokens no
    merge produced (the byte symbols)."""

    def build(t: str) -> MergeNode:
        node = MergeNode(
            t,
            tokenizer.token_to_id(t),
            None,
            hex_bytes(token_view.token_bytes(tokenizer, t)),
            token_view.readable(tokenizer, t),
        )
        found = token_view.merge_of(tokenizer, t)
        if found is not None:
            node.rank = found[0]
            node.left, node.right = build(found[1]), build(found[2])
        return node

    return build(token)


def _resolve_token(tokenizer: Tokenizer, token_or_id: int | str) -> tuple[int, str]:
    if isinstance(token_or_id, int):
        token = tokenizer.id_to_token(token_or_id)
        if token is None:
            raise ToktoolsError(f"no token has id {token_or_id} (vocabulary size {tokenizer.vocab_size})")
        return token_or_id, token
    token_id = tokenizer.token_to_id(token_or_id)
    if token_id is not None:
        return token_id, token_or_id
    if token_view.is_byte_level(tokenizer):
        symbols = text_to_symbols(token_or_id)  # " Hello" → "ĠHello"
        token_id = tokenizer.token_to_id(symbols)
        if token_id is not None:
            return token_id, symbols
    metaspace = token_view.view(tokenizer).metaspace
    if metaspace and " " in token_or_id:
        spelled = token_or_id.replace(" ", metaspace)  # " the" → "▁the" (sentencepiece, Metaspace)
        token_id = tokenizer.token_to_id(spelled)
        if token_id is not None:
            return token_id, spelled
    hint = ""
    if token_or_id:
        pieces = [token_view.readable(tokenizer, t) for t in token_view.encode_plain(tokenizer, token_or_id).tokens]
        if len(pieces) > 1:
            hint = f"; as text it encodes to {len(pieces)} tokens: {' | '.join(pieces)}"
        if token_or_id.isdigit():
            hint += f" (for the token with id {token_or_id}, use --id {token_or_id})"
    raise ToktoolsError(f"{token_or_id!r} is not a token of this vocabulary{hint}")


def token_info(tokenizer: Tokenizer, token_or_id: int | str) -> TokenInfo:
    """Everything about one token, given as an id (an ``int``) or a string: a token string
    (``"ĠHello"``) or — for byte-level BPE — the text it stands for (``" Hello"``). A string is
    never read as an id (``"1990"`` is a token of GPT-2). Raises :class:`ToktoolsError` when
    nothing matches."""
    token_id, token = _resolve_token(tokenizer, token_or_id)
    note = None
    if isinstance(token_or_id, str) and token == token_or_id and token_view.is_byte_level(tokenizer):
        symbols = text_to_symbols(token_or_id)
        if symbols != token_or_id:  # "²" is a byte symbol (B2) and also a text (C2 B2): say which was taken
            other = tokenizer.token_to_id(symbols)
            as_text = (
                f"the token {symbols} (id {other})"
                if other is not None
                else f"{len(token_view.encode_plain(tokenizer, token_or_id).ids)} tokens"
            )
            note = f"taken as a token string; as text, {token_or_id!r} is {as_text}"
    added = token_view.added_tokens(tokenizer)
    specials = token_view.special_tokens(tokenizer)
    s = surface_of(tokenizer, token)
    is_added = token in added
    tree = None
    if token_view.merges(tokenizer) is not None and not is_added:
        tree = merge_tree(tokenizer, token)
    return TokenInfo(
        id=token_id,
        token=token,
        kind=token_view.family(tokenizer),
        readable=token_view.readable(tokenizer, token),
        special=token in specials,
        added=is_added,
        continuation=s.continuation,
        surface=s.text,
        hex=hex_bytes(s.raw),
        bytes=len(s.raw),
        chars=len(s.text) if s.text is not None else None,
        byte_symbols="".join(BYTE_TO_SYMBOL[b] for b in s.raw),
        script=script_of_surface(s),
        merge_tree=tree,
        note=note,
        score=tokenizer.model.score(token_id) if tokenizer.model.id_to_token(token_id) == token else None,
        piece_type=_piece_type(tokenizer, token_id),
    )


def _piece_type(tokenizer: Any, token_id: int) -> str | None:
    """The type of piece ``token_id`` in a sentencepiece ``.model`` (None for other tokenizers)."""
    model = getattr(tokenizer, "spm_model", None)
    if model is None or not 0 <= token_id < len(model.pieces):
        return None
    from toktools.sentencepiece.model_file import TYPE_NAMES

    return TYPE_NAMES.get(model.pieces[token_id].type, str(model.pieces[token_id].type))
