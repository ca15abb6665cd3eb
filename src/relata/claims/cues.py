"""Polarity and direction cues of a sentence, with what each one negates or changes.

* **Negations**: the predicate's negators ("not", "no", "never", "n't", "neither", "nor",
  "cannot", "lack(s)", "failed to", "unable to"). Not negations: "not only", "no doubt",
  "lack of", a "not"/"no" after "but", "or", "if", "whether", "and", "than" (a contrast with
  another case), and nominal negatives ("without surgery", "mice lacking X", "absence of X"),
  which name a condition.
* **Directions**: increase or decrease words ("higher", "more", "elevated", "up-regulates",
  "promotes" / "lower", "less", "reduced", "inhibits"); "more than 5" is a bound (a
  quantity), not a direction.

Each cue carries the content terms of its *scope* (the rest of its clause) and its *target*
(what it acts on), so a comparison can ask whether two cues are about the same thing.
"""

from __future__ import annotations

import bisect
import enum
import re
from dataclasses import dataclass
from typing import Final

from relata.claims.words import is_content, stem, tokens, word_set


class Polarity(enum.StrEnum):
    AFFIRMED = "affirmed"
    NEGATED = "negated"


class Direction(enum.IntEnum):
    DECREASE = -1
    INCREASE = 1


#: Words that negate the predicate of their clause. A negation inside a noun phrase ("lack
#: of X", "mice lacking X", "without surgery", "absence of X") names a condition, not a
#: denial, and is not one.
_NEGATORS: Final = word_set("not no never none neither nor cannot nothing nobody lack lacks")
#: Negators that need the next word: "failed to", "unable to".
_NEGATING_PAIRS: Final[dict[str, str]] = {
    "failed": "to",
    "fail": "to",
    "fails": "to",
    "unable": "to",
    "insufficient": "to",
}
_CUE_WORDS: Final = _NEGATORS | _NEGATING_PAIRS.keys()
#: "not only", "no doubt", "lack of": not a negation of what follows.
_NOT_NEGATING_AFTER: Final[dict[str, frozenset[str]]] = {
    "not": frozenset({"only", "just", "merely", "solely", "necessarily", "all"}),
    "no": frozenset({"doubt", "sooner", "less", "more", "later", "longer"}),
    "lack": frozenset({"of"}),
}
#: "but not in X", "whether or not": a contrast with another case, not a denial of the
#: claim's predicate.
_NOT_NEGATING_BEFORE: Final = word_set("but or if whether and than")

_INCREASE_STEMS: Final = frozenset(
    stem(w)
    for w in word_set("""
    increase increases increased increasing rise rises rose risen rising raise raises raised
    elevate elevates elevated higher greater more enhance enhances enhanced enhancement
    promote promotes promoted upregulate upregulates upregulated up-regulate up-regulates
    up-regulated upregulation up-regulation boost boosts boosted augment augments augmented
    accelerate accelerates accelerated stimulate stimulates stimulated amplify amplified
    exacerbate exacerbates exacerbated worsen worsens worsened positively larger longer
    faster stronger expand expands expanded induce induces induced activate activates
    activated
    """)
)
_DECREASE_STEMS: Final = frozenset(
    stem(w)
    for w in word_set("""
    decrease decreases decreased decreasing decline declines declined declining reduce
    reduces reduced reducing reduction lower lowers lowered less fewer inhibit inhibits
    inhibited inhibition suppress suppresses suppressed suppression downregulate
    downregulates downregulated down-regulate down-regulates down-regulated downregulation
    down-regulation attenuate attenuates attenuated diminish diminishes diminished impair
    impairs impaired drop drops dropped fall falls fell fallen slow slows slowed prevent
    prevents prevented negatively smaller shorter weaker deplete depleted depletion
    abolish abolished shrink shrank alleviate alleviates alleviated deactivate deactivates
    deactivated
    """)
)
# Bare "high", "low", "loss", "growth", "positive" are left out: they describe a group or a
# thing ("a high tax rate", "weight loss") far more often than they state a change.
#: "more than 5", "less than 10%": a bound on a number (a quantity facet), not a direction.
_BOUND_OF_NUMBER: Final = re.compile(r"\s+than\s+(?:[$€£~]\s*)?(?:\d|a\s|an\s|one\b|two\b)")
#: A verb after "to" in one of these forms is no infinitive ("led to reduced survival").
_INFLECTED: Final = re.compile(r"(?:ed|ing|s)$", re.IGNORECASE)
_CLAUSE_BREAK: Final = re.compile(r"[;:,()]|\b(?:but|whereas|while|although|though)\b")
#: How many content words make a cue's target.
TARGET_TERMS: Final = 3


@dataclass(frozen=True, slots=True)
class Cue:
    """A negation or direction word in a sentence, with the content terms of its scope
    (what follows it, up to the end of its clause) and its target: what it negates or
    changes, at most ``TARGET_TERMS`` content words. The target is what follows the cue
    ("reduces *the risk of stroke*", "*no* association"), or, after a copula, the words
    before it ("*tau phosphorylation* was reduced"). ``negated`` marks a direction cue
    that a negation before it in its clause denies ("did not increase")."""

    start: int
    end: int
    text: str
    sign: int
    scope: frozenset[str]
    target: tuple[str, ...] = ()
    negated: bool = False


_COPULAS: Final = word_set("is are was were be been being become became remains remained")
_ADVERB_SKIP: Final = word_set("significantly markedly slightly strongly substantially also not")


class SentenceWords:
    """A sentence's words and clause breaks, read once and shared by the cue readers."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        self.words = list(tokens(sentence))
        self.lowered = [w.lower() for _, _, w in self.words]
        self.lower = frozenset(self.lowered)
        self.breaks = [m.start() for m in _CLAUSE_BREAK.finditer(sentence)]

    def clause(self, at: int) -> tuple[int, int]:
        """The clause around offset ``at``: between the clause breaks either side."""
        i = bisect.bisect_right(self.breaks, at)
        start = self.breaks[i - 1] if i else 0
        end = self.breaks[i] if i < len(self.breaks) else len(self.sentence)
        return start, end

    def cue(self, index: int, end: int, sign: int, negated: bool = False) -> Cue:
        """A cue over the words from ``index`` to offset ``end``, with its scope and target."""
        start = self.words[index][0]
        clause_start, clause_end = self.clause(start)
        after = [
            stem(w)
            for s, e, w in self.words[index:]
            if end <= s and e <= clause_end and is_content(w)
        ]
        target = tuple(dict.fromkeys(after))[:TARGET_TERMS]
        previous = self._previous(index)
        # An adverb cue ("positively associated with") grades what follows it.
        if previous in _COPULAS and not self.lowered[index].endswith("ly"):
            # "was reduced", "were more frequent": the cue is the predicate of a copula and
            # changes its subject (with the adjective it grades, if any).
            following = self.words[index + 1][2] if index + 1 < len(self.words) else ""
            graded = (stem(following),) if following and is_content(following) else ()
            before = [
                stem(w)
                for s, _, w in self.words[:index]
                if s >= clause_start and is_content(w) and w.lower() not in _ADVERB_SKIP
            ]
            target = tuple(dict.fromkeys((*graded, *reversed(before))))[:TARGET_TERMS]
        return Cue(start, end, self.sentence[start:end], sign, frozenset(after), target, negated)

    def _previous(self, index: int) -> str:
        """The word before ``index``, skipping adverbs ("was significantly reduced")."""
        i = index - 1
        while i >= 0 and (self.lowered[i] in _ADVERB_SKIP or self.lowered[i].endswith("ly")):
            i -= 1
        return self.lowered[i] if i >= 0 else ""


def find_negations(words: SentenceWords) -> list[Cue]:
    cues: list[Cue] = []
    ws, lowered = words.words, words.lowered
    if not (words.lower & _CUE_WORDS) and "n't" not in words.sentence:
        return cues
    for index, (_, end, _) in enumerate(ws):
        lower = lowered[index]
        following = lowered[index + 1] if index + 1 < len(ws) else ""
        previous = lowered[index - 1] if index else ""
        if lower in _NEGATORS or lower.endswith("n't"):
            if following in _NOT_NEGATING_AFTER.get(lower, frozenset()):
                continue
            if ws[index][2] == "NO" and not words.sentence.isupper():
                continue  # nitric oxide, a number abbreviation: not the word "no"
            if previous in _NOT_NEGATING_BEFORE and lower in ("not", "no"):
                continue
        elif _NEGATING_PAIRS.get(lower) == following and following:
            end = ws[index + 1][1]
        else:
            continue
        cues.append(words.cue(index, end, -1))
    return cues


def find_directions(words: SentenceWords, negations: list[Cue]) -> list[Cue]:
    cues: list[Cue] = []
    for index, (start, end, word) in enumerate(words.words):
        s = stem(word)
        sign = 1 if s in _INCREASE_STEMS else -1 if s in _DECREASE_STEMS else 0
        if sign and not _BOUND_OF_NUMBER.match(words.sentence, end):
            if index and words.lowered[index - 1] == "to" and not _INFLECTED.search(word):
                continue  # "used to prevent", "efforts to lower": a purpose, not a change
            clause_start, _ = words.clause(start)
            negated = any(clause_start <= n.start and n.end <= start for n in negations)
            cues.append(words.cue(index, end, sign, negated))
    return cues
