"""Compiled loops for :mod:`toktools.models.unigram.trainer` (optional: needs ``numba``, extra ``fast``).

Each kernel is the pure-Python step of the trainer written over flat arrays, with the same
floating-point operations in the same order (``math.exp``/``math.log`` are the C library's in
both, no fast-math), so a vocabulary trained with or without them is byte for byte the same;
``tests/test_unigram_trainer.py`` checks it. Importing this module fails without numba; the
trainer then runs its pure-Python steps.

Layout: the words' characters are one ``int32`` array of code points, word ``w`` being
``codes[word_off[w]:word_off[w + 1]]``. Seed pieces live in a trie (``children`` maps
``parent * 0x110000 + code point`` to a node, ``terminal[node]`` is a seed id or -1). The
lattice candidates of every word are ``(start, length, seed)`` arrays sorted by start, then
length: the order in which ``tokenizers`` inserts lattice nodes.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.typed import Dict

from toktools.models.unigram import digamma as unigram_digamma
from toktools.runtime.numba_cache import cached_njit

_BASE = 0x110000


# -- seeds: suffix array and the internal nodes of the suffix tree -----------------------------


def prefix_sorted_suffixes(text: np.ndarray, depth: int) -> np.ndarray:
    """Suffix start positions sorted by their first ``depth`` (or more) characters (prefix
    doubling; ties beyond that are left in position order: the suffix-tree nodes no deeper than
    ``depth - 1`` do not depend on them)."""
    n = len(text)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    _, rank = np.unique(text, return_inverse=True)
    rank = rank.astype(np.int64)
    k = 1
    order = np.argsort(rank, kind="stable")
    while k < depth:
        second = np.full(n, -1, dtype=np.int64)
        second[: n - k] = rank[k:]
        key = rank * (n + 1) + (second + 1)
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        new_rank = np.empty(n, dtype=np.int64)
        new_rank[order] = np.concatenate(([0], np.cumsum(sorted_key[1:] != sorted_key[:-1])))
        rank = new_rank
        if rank.max() == n - 1:
            break
        k *= 2
    return order


@cached_njit()
def suffix_tree_seeds(text, sa, max_len):
    """``(start, depth, occurrences)`` of the internal suffix-tree nodes with
    ``1 < depth <= max_len`` and no ``\\0`` (the stack walk of esaxx over the LCP array, the
    LCP capped at ``max_len + 1``, which keeps every node no deeper than ``max_len``)."""
    n = len(text)
    cap = max_len + 1
    lcp = np.zeros(n, dtype=np.int64)
    for i in range(1, n):
        a = sa[i - 1]
        b = sa[i]
        h = 0
        while h < cap and a + h < n and b + h < n and text[a + h] == text[b + h]:
            h += 1
        lcp[i] = h
    next_zero = np.empty(n + 1, dtype=np.int64)
    next_zero[n] = n
    for i in range(n - 1, -1, -1):
        next_zero[i] = i if text[i] == 0 else next_zero[i + 1]
    out_start = np.empty(n, dtype=np.int64)
    out_depth = np.empty(n, dtype=np.int64)
    out_freq = np.empty(n, dtype=np.int64)
    found = 0
    stack_first = np.empty(n + 2, dtype=np.int64)
    stack_depth = np.empty(n + 2, dtype=np.int64)
    stack_first[0] = -1
    stack_depth[0] = -1
    top = 1
    for i in range(n + 1):
        cur_first = i
        cur_depth = -1 if i == n else lcp[i]
        while stack_depth[top - 1] > cur_depth:
            first = stack_first[top - 1]
            depth = stack_depth[top - 1]
            if i - first > 1 and 1 < depth <= max_len:
                start = sa[first]
                if next_zero[start] >= start + depth:
                    out_start[found] = start
                    out_depth[found] = depth
                    out_freq[found] = i - first
                    found += 1
            cur_first = first
            top -= 1
        if stack_depth[top - 1] < cur_depth:
            stack_first[top] = cur_first
            stack_depth[top] = cur_depth
            top += 1
        if i == n:
            break
        stack_first[top] = i
        stack_depth[top] = n - sa[i] + 1
        top += 1
    return out_start[:found], out_depth[:found], out_freq[:found]


# -- the trie of seed pieces and the lattice candidates --------------------------------------


@cached_njit()
def _child(children, key):
    if key in children:
        return children[key]
    return -1


@cached_njit()
def build_trie(codes, offsets):
    """Trie of the pieces ``codes[offsets[i]:offsets[i + 1]]``; a repeated piece keeps its last id."""
    children = Dict.empty(key_type=types.int64, value_type=types.int64)
    terminal_list = [-1]
    for i in range(len(offsets) - 1):
        if offsets[i + 1] == offsets[i]:
            continue
        node = 0
        for k in range(offsets[i], offsets[i + 1]):
            key = node * _BASE + codes[k]
            child = _child(children, key)
            if child < 0:
                child = len(terminal_list)
                terminal_list.append(-1)
                children[key] = child
            node = child
        terminal_list[node] = i
    terminal = np.empty(len(terminal_list), dtype=np.int64)
    for k in range(len(terminal_list)):
        terminal[k] = terminal_list[k]
    return children, terminal


@cached_njit()
def lattice_candidates(codes, word_off, children, terminal):
    """Every seed piece matching at every position of every word: ``(global start, length, seed)``,
    by start then length."""
    total = 0
    for w in range(len(word_off) - 1):
        end = word_off[w + 1]
        for pos in range(word_off[w], end):
            node = 0
            k = pos
            while k < end:
                node = _child(children, node * _BASE + codes[k])
                if node < 0:
                    break
                k += 1
                if terminal[node] >= 0:
                    total += 1
    starts = np.empty(total, dtype=np.int64)
    lengths = np.empty(total, dtype=np.int32)
    seeds = np.empty(total, dtype=np.int64)
    j = 0
    for w in range(len(word_off) - 1):
        end = word_off[w + 1]
        for pos in range(word_off[w], end):
            node = 0
            k = pos
            while k < end:
                node = _child(children, node * _BASE + codes[k])
                if node < 0:
                    break
                k += 1
                if terminal[node] >= 0:
                    starts[j] = pos
                    lengths[j] = k - pos
                    seeds[j] = terminal[node]
                    j += 1
    return starts, lengths, seeds


@cached_njit()
def _word_nodes(lo, n, k, starts, lengths, ids, scores, unk_score, n_start, n_end, n_id, n_score, begin):
    """The lattice of one word (``_Model.nodes``): its candidates from ``k`` on, plus an unk node
    (id 0) at every position without a one-character piece. Returns the next candidate index."""
    m = 0
    total = len(starts)
    for pos in range(n):
        begin[pos] = m
        single = False
        while k < total and starts[k] == lo + pos:
            n_start[m] = pos
            n_end[m] = pos + lengths[k]
            n_id[m] = ids[k]
            n_score[m] = scores[k]
            if lengths[k] == 1:
                single = True
            m += 1
            k += 1
        if not single:
            n_start[m] = pos
            n_end[m] = pos + 1
            n_id[m] = 0
            n_score[m] = unk_score
            m += 1
    begin[n] = m
    return k


@cached_njit()
def _scratch_size(word_off, starts):
    """The longest word, and the most lattice nodes one word can have (candidates + unk nodes)."""
    longest = 0
    width = 1
    k = 0
    for w in range(len(word_off) - 1):
        n = word_off[w + 1] - word_off[w]
        first = k
        while k < len(starts) and starts[k] < word_off[w + 1]:
            k += 1
        longest = max(longest, n)
        width = max(width, k - first + n + 1)
    return longest, width


@cached_njit()
def _lse(acc, y):
    if acc > y:
        lo = y
        hi = acc
    else:
        lo = acc
        hi = y
    if hi > lo + 50.0:
        return hi
    return hi + math.log(math.exp(lo - hi) + 1.0)


@cached_njit()
def e_step(word_off, counts, starts, lengths, ids, scores, unk_score, n_pieces):
    """``expected[id]`` summed over every word's lattice (``_marginal``), and whether a
    likelihood was NaN."""
    expected = np.zeros(n_pieces, dtype=np.float64)
    n_words = len(word_off) - 1
    longest, width = _scratch_size(word_off, starts)
    n_start = np.empty(width, dtype=np.int64)
    n_end = np.empty(width, dtype=np.int64)
    n_id = np.empty(width, dtype=np.int64)
    n_score = np.empty(width, dtype=np.float64)
    begin = np.empty(longest + 1, dtype=np.int64)
    forward = np.empty(longest + 1, dtype=np.float64)
    seen = np.zeros(longest + 1, dtype=np.bool_)
    backward = np.empty(longest + 1, dtype=np.float64)
    k = 0
    nan = False
    for w in range(n_words):
        lo = word_off[w]
        n = word_off[w + 1] - lo
        k = _word_nodes(lo, n, k, starts, lengths, ids, scores, unk_score, n_start, n_end, n_id, n_score, begin)
        freq = counts[w]
        for pos in range(n + 1):
            seen[pos] = False
        forward[0] = 0.0
        for pos in range(n):
            a = forward[pos] if seen[pos] else 0.0
            forward[pos] = a
            for j in range(begin[pos], begin[pos + 1]):
                y = n_score[j] + a
                e = n_end[j]
                if seen[e]:
                    forward[e] = _lse(forward[e], y)
                else:
                    forward[e] = y
                    seen[e] = True
        if not seen[n]:
            forward[n] = 0.0
        z = forward[n]
        backward[n] = 0.0
        for pos in range(n - 1, -1, -1):
            first = True
            acc = 0.0
            for j in range(begin[pos], begin[pos + 1]):
                y = n_score[j] + backward[n_end[j]]
                if first:
                    acc = y
                    first = False
                else:
                    acc = _lse(acc, y)
            backward[pos] = acc
        for pos in range(n):
            a = forward[pos]
            for j in range(begin[pos], begin[pos + 1]):
                expected[n_id[j]] += freq * math.exp(a + n_score[j] + backward[n_end[j]] - z)
        if math.isnan(freq * z):
            nan = True
    return expected, nan


@cached_njit()
def viterbi_counts(word_off, counts, starts, lengths, ids, scores, unk_score, n_pieces):
    """``freq[id]`` (count-weighted occurrences on every word's best path, ``_viterbi``: per node,
    the best incoming path, strict ``>`` in insertion order) and the sum of the counts."""
    freq = np.zeros(n_pieces, dtype=np.float64)
    vsum = 0.0
    n_words = len(word_off) - 1
    longest, width = _scratch_size(word_off, starts)
    n_start = np.empty(width, dtype=np.int64)
    n_end = np.empty(width, dtype=np.int64)
    n_id = np.empty(width, dtype=np.int64)
    n_score = np.empty(width, dtype=np.float64)
    begin = np.empty(longest + 1, dtype=np.int64)
    back = np.empty(width, dtype=np.float64)
    prev = np.empty(width, dtype=np.int64)
    end_count = np.zeros(longest + 2, dtype=np.int64)
    end_nodes = np.empty(width, dtype=np.int64)
    fill = np.empty(longest + 2, dtype=np.int64)
    k = 0
    for w in range(n_words):
        lo = word_off[w]
        n = word_off[w + 1] - lo
        k = _word_nodes(lo, n, k, starts, lengths, ids, scores, unk_score, n_start, n_end, n_id, n_score, begin)
        m = begin[n]
        vsum += counts[w]
        # nodes ending at each position, in creation order
        for pos in range(n + 2):
            end_count[pos] = 0
        for j in range(m):
            end_count[n_end[j] + 1] += 1
        for pos in range(1, n + 2):
            end_count[pos] += end_count[pos - 1]
        for pos in range(n + 1):
            fill[pos] = end_count[pos]
        for j in range(m):
            end_nodes[fill[n_end[j]]] = j
            fill[n_end[j]] += 1
        for pos in range(n):
            for r in range(begin[pos], begin[pos + 1]):
                score = n_score[r]
                best = -2  # None
                best_score = 0.0
                if pos == 0:
                    best = -1
                    best_score = 0.0 + score
                else:
                    for t in range(end_count[pos], end_count[pos + 1]):
                        left = end_nodes[t]
                        cand = back[left] + score
                        if best == -2 or cand > best_score:
                            best = left
                            best_score = cand
                back[r] = best_score
                prev[r] = best
        best = -2
        best_score = 0.0
        for t in range(end_count[n], end_count[n + 1]):
            left = end_nodes[t]
            if best == -2 or back[left] > best_score:
                best = left
                best_score = back[left]
        node = best
        while node >= 0:
            freq[n_id[node]] += counts[w]
            node = prev[node]
    return freq, vsum


#: the pure-Python digamma, compiled: the same operations in the same order
digamma = cached_njit()(unigram_digamma.digamma)


@cached_njit()
def m_step(expected):
    """``_m_step``: which pieces stay (id 0 always; expected count at least 0.5) and their scores."""
    n = len(expected)
    keep = np.zeros(n, dtype=np.bool_)
    total = 0.0
    for i in range(n):
        if i == 0:
            keep[i] = True
            continue
        if expected[i] < 0.5:
            continue
        keep[i] = True
        total += expected[i]
    logsum = digamma(total)
    scores = np.empty(n, dtype=np.float64)
    for i in range(n):
        if keep[i]:
            scores[i] = math.nan if i == 0 else digamma(expected[i]) - logsum
    return keep, scores


# -- pruning: each piece's two best segmentations --------------------------------------------


@cached_njit()
def _less(negfx, seq, a, b):
    """Python's tuple ``<`` on agenda entries ``(-fx, seq, ...)``."""
    if negfx[a] != negfx[b]:
        return negfx[a] < negfx[b]
    return seq[a] < seq[b]


@cached_njit()
def _siftdown(heap, negfx, seq, startpos, pos):
    newitem = heap[pos]
    while pos > startpos:
        parentpos = (pos - 1) >> 1
        parent = heap[parentpos]
        if _less(negfx, seq, newitem, parent):
            heap[pos] = parent
            pos = parentpos
            continue
        break
    heap[pos] = newitem


@cached_njit()
def _siftup(heap, size, negfx, seq, pos):
    startpos = pos
    newitem = heap[pos]
    childpos = 2 * pos + 1
    while childpos < size:
        rightpos = childpos + 1
        if rightpos < size and not _less(negfx, seq, heap[childpos], heap[rightpos]):
            childpos = rightpos
        heap[pos] = heap[childpos]
        pos = childpos
        childpos = 2 * pos + 1
    heap[pos] = newitem
    _siftdown(heap, negfx, seq, startpos, pos)


@cached_njit()
def two_best(piece_codes, piece_off, children, terminal, seed_cur, cur_scores, unk_score):
    """For each piece (``piece_codes[piece_off[i]:piece_off[i + 1]]``, current id ``i``), the
    2-best of its own lattice as ``Lattice.nbest(2)`` finds them (A* from EOS over Viterbi
    scores, heap ties by push order): ``status[i]`` = number of paths (0-2), or -1 when the
    agenda would need trimming (left to the Python code); ``first_len[i]`` = tokens of the best
    path; when that is the piece alone, the ids of the second path in ``alt[alt_off[i]:alt_off[i + 1]]``."""
    n_pieces = len(piece_off) - 1
    status = np.zeros(n_pieces, dtype=np.int64)
    first_len = np.zeros(n_pieces, dtype=np.int64)
    alt_off = np.zeros(n_pieces + 1, dtype=np.int64)
    alt = np.empty(16 * n_pieces + 16, dtype=np.int64)
    alt_used = 0
    longest = 1
    for i in range(n_pieces):
        longest = max(longest, piece_off[i + 1] - piece_off[i])
    width = 2 + longest * (longest + 1)
    nid = np.empty(width, dtype=np.int64)
    nstart = np.empty(width, dtype=np.int64)
    nscore = np.empty(width, dtype=np.float64)
    begin_count = np.zeros(longest + 2, dtype=np.int64)
    begin_nodes = np.empty(width, dtype=np.int64)
    end_count = np.zeros(longest + 2, dtype=np.int64)
    end_nodes = np.empty(width, dtype=np.int64)
    fill = np.empty(longest + 2, dtype=np.int64)
    nend = np.empty(width, dtype=np.int64)
    back = np.empty(width, dtype=np.float64)
    cap = 1024
    a_negfx = np.empty(cap, dtype=np.float64)
    a_seq = np.empty(cap, dtype=np.int64)
    a_node = np.empty(cap, dtype=np.int64)
    a_gx = np.empty(cap, dtype=np.float64)
    a_parent = np.empty(cap, dtype=np.int64)
    heap = np.empty(cap, dtype=np.int64)
    path = np.empty(longest + 1, dtype=np.int64)
    for i in range(n_pieces):
        alt_off[i] = alt_used
        if i == 0:
            continue
        lo = piece_off[i]
        n = piece_off[i + 1] - lo
        # nodes: 0 BOS, 1 EOS, then matches by position and length, unk where no single char
        nid[0] = -1
        nstart[0] = 0
        nend[0] = 0
        nscore[0] = 0.0
        nid[1] = -2
        nstart[1] = n
        nend[1] = n
        nscore[1] = 0.0
        m = 2
        for pos in range(n):
            single = False
            node = 0
            k = lo + pos
            while k < lo + n:
                node = _child(children, node * _BASE + piece_codes[k])
                if node < 0:
                    break
                k += 1
                s = terminal[node]
                if s >= 0 and seed_cur[s] >= 0:
                    nid[m] = seed_cur[s]
                    nstart[m] = pos
                    nend[m] = k - lo
                    nscore[m] = cur_scores[seed_cur[s]]
                    if k - lo - pos == 1:
                        single = True
                    m += 1
            if not single:
                nid[m] = 0
                nstart[m] = pos
                nend[m] = pos + 1
                nscore[m] = unk_score
                m += 1
        # begin[pos] (EOS first at n) and end[pos] (BOS first at 0), in insertion order
        for pos in range(n + 2):
            begin_count[pos] = 0
            end_count[pos] = 0
        begin_count[n + 1] += 1
        end_count[1] += 1
        for j in range(2, m):
            begin_count[nstart[j] + 1] += 1
            end_count[nend[j] + 1] += 1
        for pos in range(1, n + 2):
            begin_count[pos] += begin_count[pos - 1]
            end_count[pos] += end_count[pos - 1]
        for pos in range(n + 1):
            fill[pos] = begin_count[pos]
        begin_nodes[fill[n]] = 1
        fill[n] += 1
        for j in range(2, m):
            begin_nodes[fill[nstart[j]]] = j
            fill[nstart[j]] += 1
        for pos in range(n + 1):
            fill[pos] = end_count[pos]
        end_nodes[fill[0]] = 0
        fill[0] += 1
        for j in range(2, m):
            end_nodes[fill[nend[j]]] = j
            fill[nend[j]] += 1
        # Lattice.viterbi: the best backtrace score of every node
        for j in range(m):
            back[j] = 0.0
        broken = False
        for pos in range(n + 1):
            if begin_count[pos + 1] == begin_count[pos]:
                broken = True
                break
            for t in range(begin_count[pos], begin_count[pos + 1]):
                r = begin_nodes[t]
                best = -1
                best_score = 0.0
                for u in range(end_count[pos], end_count[pos + 1]):
                    left = end_nodes[u]
                    cand = back[left] + nscore[r]
                    if best == -1 or cand > best_score:
                        best = left
                        best_score = cand
                if best == -1:
                    broken = True
                    break
                back[r] = best_score
            if broken:
                break
        if broken:
            status[i] = -1
            continue
        # Lattice.nbest(2)
        used = 1
        a_negfx[0] = -0.0
        a_seq[0] = 0
        a_node[0] = 1
        a_gx[0] = 0.0
        a_parent[0] = -1
        heap[0] = 0
        size = 1
        seq = 0
        found = 0
        while size > 0:
            # heappop
            size -= 1
            last = heap[size]
            if size > 0:
                top = heap[0]
                heap[0] = last
                _siftup(heap, size, a_negfx, a_seq, 0)
            else:
                top = last
            node = a_node[top]
            gx = a_gx[top]
            if node == 0:
                plen = 0
                link = a_parent[top]
                while link >= 0 and a_node[link] != 1:
                    path[plen] = a_node[link]
                    plen += 1
                    link = a_parent[link]
                if found == 0:
                    first_len[i] = plen
                elif first_len[i] == 1:  # only a piece that is its own best segmentation keeps one
                    if alt_used + plen > len(alt):
                        grown = np.empty(2 * len(alt) + plen, dtype=np.int64)
                        grown[:alt_used] = alt[:alt_used]
                        alt = grown
                    for t in range(plen):
                        alt[alt_used] = nid[path[t]]
                        alt_used += 1
                found += 1
                if found == 2:
                    break
                continue
            pos = nstart[node]
            for u in range(end_count[pos], end_count[pos + 1]):
                left = end_nodes[u]
                seq += 1
                if used == cap:
                    cap *= 2
                    a_negfx = _grow_f(a_negfx, cap)
                    a_seq = _grow_i(a_seq, cap)
                    a_node = _grow_i(a_node, cap)
                    a_gx = _grow_f(a_gx, cap)
                    a_parent = _grow_i(a_parent, cap)
                    heap = _grow_i(heap, cap)
                fx = back[left] + gx
                a_negfx[used] = -fx
                a_seq[used] = seq
                a_node[used] = left
                a_gx[used] = nscore[left] + gx
                a_parent[used] = top
                heap[size] = used
                size += 1
                used += 1
                _siftdown(heap, a_negfx, a_seq, 0, size - 1)
            if size > 100_000:
                found = -1
                break
        status[i] = found
    alt_off[n_pieces] = alt_used
    return status, first_len, alt_off, alt[:alt_used]


@cached_njit()
def _grow_f(a, cap):
    out = np.empty(cap, dtype=np.float64)
    out[: len(a)] = a
    return out


@cached_njit()
def _grow_i(a, cap):
    out = np.empty(cap, dtype=np.int64)
    out[: len(a)] = a
    return out


@cached_njit()
def _log(x):
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


@cached_njit()
def prune_select(freq, always_keep, alt_off, alt, vsum, pruned_size):
    """``_prune_by_loss``: the ids kept, in the new order (id 0, the pieces kept outright, then
    the candidates by loss, highest first, ties in id order)."""
    n = len(freq)
    total = 0.0
    for i in range(n):
        total += freq[i]
    logsum = _log(total)
    new = np.empty(n, dtype=np.int64)
    new[0] = 0
    count = 1
    cand_pid = np.empty(n, dtype=np.int64)
    cand_loss = np.empty(n, dtype=np.float64)
    nc = 0
    for pid in range(1, n):
        if freq[pid] == 0.0 and not always_keep[pid]:
            continue
        if alt_off[pid] == alt_off[pid + 1]:
            new[count] = pid
            count += 1
            continue
        f = freq[pid]
        if f == 0.0 or math.isnan(f):
            continue
        f /= vsum
        logprob_sp = _log(freq[pid]) - logsum
        logsum_alt = _log(total + freq[pid] * (n - 1))
        logprob_alt = 0.0
        for t in range(alt_off[pid], alt_off[pid + 1]):
            logprob_alt += _log(freq[alt[t]] + freq[pid]) - logsum_alt
        cand_pid[nc] = pid
        cand_loss[nc] = f * (logprob_sp - logprob_alt)
        nc += 1
    order = np.argsort(-cand_loss[:nc], kind="mergesort")
    for o in order:
        if count == pruned_size:
            break
        new[count] = cand_pid[o]
        count += 1
    return new[:count]


@cached_njit()
def gather_pieces(seed_codes, seed_off, piece_seed):
    """The code points of the pieces ``piece_seed`` (seed ids), one array, and their offsets."""
    n = len(piece_seed)
    off = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        s = piece_seed[i]
        off[i + 1] = off[i] + seed_off[s + 1] - seed_off[s]
    codes = np.empty(off[n], dtype=seed_codes.dtype)
    for i in range(n):
        s = piece_seed[i]
        codes[off[i] : off[i + 1]] = seed_codes[seed_off[s] : seed_off[s + 1]]
    return codes, off
