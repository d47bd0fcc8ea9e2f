"""Build a tiny, randomly initialised Qwen3 model with its own tokenizer, offline.

Run with the engine venv's interpreter (it needs ``transformers<5``, ``tokenizers``
and ``torch``):

    python tests/engine/build_tiny_model.py OUTPUT_DIR [--seed 0] [--vocab-size 300]

The output directory holds ``config.json``, ``generation_config.json``,
``model.safetensors`` and the tokenizer files, loadable with
``AutoTokenizer.from_pretrained`` / ``AutoModelForCausalLM.from_pretrained`` and by
SkyRL tx as ``--base-model OUTPUT_DIR``. Nothing is fetched from a hub: the tokenizer
is trained here on strings this script generates, and the weights are random with a
fixed seed, so two runs give identical files.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [ENDOFTEXT, IM_START, IM_END]

# Qwen-style ChatML template: every message is framed by <|im_start|>role ... <|im_end|>,
# and the generation prompt opens an assistant turn.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)

WORDS = (
    "the a an of to and in is it that for on with as was at by be this have from or one had "
    "not but what all were when we there can your which their said if do will each about how "
    "up out them then she many some so these would other into has more her two like him see "
    "time could no make than first been its who now people my made over did down only way find "
    "use may water long little very after words called just where most know get through back "
    "much before go good new write our used me man too any day same right look think also "
    "around another came come work three word must because does part even place well such here "
    "take why things help put years different away again off went old number great tell men say "
    "small every found still between name should home big give air line set own under read last "
    "never us left end along while might next sound below saw something thought both few those "
    "always looked show large often together asked house don't world going want school important "
    "until form food keep children feet land side without boy once animal life enough took "
    "yes hello thanks please answer question correct wrong score reward model agent tool math "
    "add sum total result true false ok done error value list item step plan check"
).split()

SYSTEM_LINES = [
    "You are a helpful assistant.",
    "You are a careful math tutor.",
    "Answer with one word.",
    "Think step by step, then answer.",
]


def _sentence(rng: random.Random) -> str:
    n = rng.randint(3, 12)
    words = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.5:
        words[0] = words[0].capitalize()
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words) + 1), str(rng.randint(0, 9999)))
    text = " ".join(words)
    if rng.random() < 0.2:
        text = text.upper()
    return text + rng.choice([".", "?", "!", ",", ":", ";", "...", ""])


def training_corpus(seed: int, n: int = 400) -> list[str]:
    """A few hundred strings: English words, digits, arithmetic, punctuation, chat frames."""
    rng = random.Random(seed)
    corpus: list[str] = []
    # Every printable ASCII character at least once, so nothing common falls back to rare bytes.
    corpus.append("".join(chr(c) for c in range(32, 127)))
    corpus.append("0123456789 10 100 1000 3.14 -7 +2 = x * y / z % (a) [b] {c} <d> \"e\" 'f' #g @h $i &j")
    corpus.append("\n\t  \n")
    for i in range(n):
        kind = i % 5
        if kind == 0:
            corpus.append(_sentence(rng))
        elif kind == 1:
            a, b = rng.randint(0, 999), rng.randint(0, 999)
            op = rng.choice(["+", "-", "*"])
            value = {"+": a + b, "-": a - b, "*": a * b}[op]
            corpus.append(f"What is {a} {op} {b}? The answer is {value}.")
        elif kind == 2:
            corpus.append(" ".join(_sentence(rng) for _ in range(rng.randint(2, 4))))
        elif kind == 3:
            user = _sentence(rng)
            reply = _sentence(rng)
            # The chat frame without its special tokens: BPE training would otherwise learn
            # merges such as "<|" out of them; the specials are added whole anyway.
            corpus.append(f"system\n{rng.choice(SYSTEM_LINES)}\nuser\n{user}\nassistant\n{reply}\n")
        else:
            key = rng.choice(WORDS)
            corpus.append(f'{{"{key}": {rng.randint(0, 99)}, "ok": {rng.choice(["true", "false"])}}}')
    return corpus


def build_tokenizer(seed: int, vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(training_corpus(seed), trainer=trainer)

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        additional_special_tokens=[IM_START, IM_END],
        model_max_length=2048,
        padding_side="right",
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(tokenizer, seed: int, max_positions: int):
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=max_positions,
        rms_norm_eps=1e-6,
        # Init std for every weight matrix and the (tied) embedding. The usual 0.02 gives a
        # near-uniform next-token distribution whose logits span only about +-1.3 nats (the
        # final RMSNorm fixes |h| at sqrt(64)); tx trains LoRA on attention and MLP but never
        # the unembedding, so such a model can barely be moved. With 0.1 the logits span
        # about +-6 nats, the untrained model still samples varied tokens (entropy ~5.4 of
        # a possible 5.7) and does not fall into repeating its last input token.
        initializer_range=0.1,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        use_cache=True,
        torch_dtype="float32",
        bos_token_id=tokenizer.convert_tokens_to_ids(ENDOFTEXT),
        eos_token_id=tokenizer.convert_tokens_to_ids(IM_END),
        pad_token_id=tokenizer.convert_tokens_to_ids(ENDOFTEXT),
    )
    model = Qwen3ForCausalLM(config).to(torch.float32)
    model.eval()
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab-size", type=int, default=300)
    parser.add_argument("--max-positions", type=int, default=2048)
    args = parser.parse_args(argv)

    out: Path = args.output_dir
    out.mkdir(parents=True, exist_ok=True)

    tokenizer = build_tokenizer(args.seed, args.vocab_size)
    model = build_model(tokenizer, args.seed, args.max_positions)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)

    # Sanity checks on what was written: the round trip through the files must work.
    from transformers import AutoTokenizer

    reloaded = AutoTokenizer.from_pretrained(out)
    prompt_ids = reloaded.apply_chat_template(
        [{"role": "user", "content": "What is 2 + 3?"}], add_generation_prompt=True, tokenize=True
    )
    sample = "Hello, world! 42 apples; 3.5 x 7 = 24.5?"
    if reloaded.decode(reloaded.encode(sample)) != sample:
        raise SystemExit("tokenizer does not round-trip plain text")
    n_params = sum(p.numel() for p in model.parameters())
    summary = {
        "output_dir": str(out.resolve()),
        "vocab_size": len(reloaded),
        "eos_token_id": reloaded.eos_token_id,
        "pad_token_id": reloaded.pad_token_id,
        "special_token_ids": {t: reloaded.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS},
        "parameters": n_params,
        "chat_prompt_len": len(prompt_ids),
        "bytes": sum(f.stat().st_size for f in out.iterdir() if f.is_file()),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
