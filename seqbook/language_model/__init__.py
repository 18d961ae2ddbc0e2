"""Language models: a character corpus, a recurrent and a decoder-only transformer LM.

The chapter "A decoder-only transformer language model" (``book/language_model.md``)
explains every piece; the LSTM and GRU chapters train their character models with the
same corpus, windows, loss and perplexity. Every model here is called as
``model(ids, state) -> (logits, state)`` and has ``init_state(batch_size)``, so
:func:`generate`, :func:`lm_loss` and :func:`perplexity` work with all of them. The one
exception, :class:`~seqbook.language_model.MixerLM` (part VI's model with a
chosen token mixer), returns logits alone from a whole sequence and generates with
``step(ids, state)``; :func:`lm_loss` and :func:`perplexity` accept it.
"""

from seqbook.language_model.bigram import BigramLM, bigram_perplexity
from seqbook.language_model.cache import KVCache, cached_self_attention
from seqbook.language_model.data import CharCorpus, char_corpus, random_windows
from seqbook.language_model.evaluate import lm_loss, loss_by_position, perplexity, sequence_loss
from seqbook.language_model.generate import generate, next_token, truncate_scores
from seqbook.language_model.mixers import MixerLM, state_floats
from seqbook.language_model.model import TransformerLM, TransformerLMConfig
from seqbook.language_model.ngram import NgramLM
from seqbook.language_model.recurrent import RecurrentLM

__all__ = [
    "BigramLM",
    "CharCorpus",
    "KVCache",
    "MixerLM",
    "NgramLM",
    "RecurrentLM",
    "TransformerLM",
    "TransformerLMConfig",
    "bigram_perplexity",
    "cached_self_attention",
    "char_corpus",
    "generate",
    "lm_loss",
    "loss_by_position",
    "next_token",
    "perplexity",
    "random_windows",
    "sequence_loss",
    "state_floats",
    "truncate_scores",
]
