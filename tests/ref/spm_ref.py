#!/usr/bin/python3
"""References for the SentencePiece tokenizers of tests/t-tok-spm.sh.

  ids MODEL --out DIR INPUT...   token ids of every input line from Google's SentencePiece
      library (Debian python3-sentencepiece) on a tokenizer.model, as SentencePiece encodes it:
      control and unknown pieces (<s>, </s>, <unk>) typed in the text are text, not specials
      (the convention attncoda follows for tokenizer.model files; a tokenizer.json's added
      tokens are matched first, as HF tokenizers does). One line of space-separated ids per
      input line.
  tojson MODEL OUT STYLE         a HF tokenizer.json for a BPE tokenizer.model, written from the
      model's pieces and scores by the rule transformers' converter states (merges: every split
      of a piece into two pieces, ordered by the piece's score, highest first). STYLE:
        llama  normaliser Prepend("▁") + Replace(" " → "▁"), no pre-tokenizer (Llama-2, Mistral)
        first  Metaspace(prepend_scheme "first", split false), no normaliser (newer files)
        split  Metaspace(prepend_scheme "always", split true), no normaliser
        nofallback  llama without byte_fallback: unknown characters become <unk>, runs fused
        unigram  the same pieces and scores as a Unigram model with byte_fallback, Metaspace
        gemma  Replace(" " → "▁") only, no dummy prefix, Split(" ", MergedWithPrevious) as
               transformers' Gemma converter writes it, decoder without Strip (Gemma)
      HF tokenizers itself is then the reference on that file.
  tomodel JSON OUT               a Unigram tokenizer.json (T5) written back as a SentencePiece
      ModelProto (protobuf wire format encoded by hand here), for reading by attncoda.
"""
import base64
import json
import os
import sys


def sp_load(path):
    import sentencepiece
    sp = sentencepiece.SentencePieceProcessor()
    sp.Load(path)
    return sp


def cmd_ids(args):
    model, out_dir, inputs = args[0], args[2], args[3:]
    assert args[1] == '--out'
    sp = sp_load(model)
    for path in inputs:
        with open(path, encoding='utf-8', newline='') as f:
            text = f.read()
        lines = text.split('\n')
        if text.endswith('\n'):
            lines.pop()
        name = os.path.basename(path)[:-4] if path.endswith('.txt') else os.path.basename(path)
        with open(os.path.join(out_dir, name + '.ids'), 'w') as f:
            for line in lines:
                f.write(' '.join(map(str, sp.EncodeAsIds(line))) + '\n')


def cmd_tojson(args):
    model, out, style = args
    sp = sp_load(model)
    n = sp.GetPieceSize()
    pieces = [sp.IdToPiece(i) for i in range(n)]
    vocab = {p: i for i, p in enumerate(pieces)}
    merges = []
    for i, p in enumerate(pieces):
        local = [(p[:k], p[k:]) for k in range(1, len(p)) if p[:k] in vocab and p[k:] in vocab]
        local.sort(key=lambda lr: (vocab[lr[0]], vocab[lr[1]]))
        merges += [(sp.GetScore(i), lr) for lr in local]
    merges.sort(key=lambda m: m[0], reverse=True)       # stable: ties keep the piece order
    added = [{'id': i, 'content': pieces[i], 'single_word': False, 'lstrip': False, 'rstrip': False,
              'normalized': False, 'special': True} for i in range(n) if sp.IsControl(i) or sp.IsUnknown(i)]
    rep = {'type': 'Replace', 'pattern': {'String': ' '}, 'content': '\u2581'}
    strip = {'type': 'Strip', 'content': ' ', 'start': 1, 'stop': 0}
    dec = [{'type': 'Replace', 'pattern': {'String': '\u2581'}, 'content': ' '},
           {'type': 'ByteFallback'}, {'type': 'Fuse'}]
    pre = None
    if style == 'llama':
        norm = {'type': 'Sequence', 'normalizers': [{'type': 'Prepend', 'prepend': '\u2581'}, rep]}
        dec.append(strip)
    elif style == 'first':
        norm = None
        pre = {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'first', 'split': False}
        dec.append(strip)
    elif style == 'split':
        norm = None
        pre = {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'always', 'split': True}
        dec.append(strip)
    elif style == 'nofallback':
        norm = {'type': 'Sequence', 'normalizers': [{'type': 'Prepend', 'prepend': '\u2581'}, rep]}
        dec.append(strip)
    elif style == 'unigram':
        norm = None
        pre = {'type': 'Metaspace', 'replacement': '\u2581', 'prepend_scheme': 'always', 'split': True}
    elif style == 'gemma':
        norm = rep
        pre = {'type': 'Split', 'pattern': {'String': ' '}, 'behavior': 'MergedWithPrevious', 'invert': False}
    else:
        sys.exit(f'spm_ref.py: unknown style {style}')
    unk = next((pieces[i] for i in range(n) if sp.IsUnknown(i)), None)
    tj = {'version': '1.0', 'truncation': None, 'padding': None, 'added_tokens': added,
          'normalizer': norm, 'pre_tokenizer': pre, 'post_processor': None,
          'decoder': {'type': 'Sequence', 'decoders': dec},
          'model': {'type': 'BPE', 'dropout': None, 'unk_token': unk, 'continuing_subword_prefix': None,
                    'end_of_word_suffix': None, 'fuse_unk': True, 'byte_fallback': True,
                    'ignore_merges': False, 'vocab': vocab, 'merges': [list(m[1]) for m in merges]}}
    if style == 'nofallback':
        tj['model']['byte_fallback'] = False
    if style == 'unigram':
        tj['model'] = {'type': 'Unigram', 'unk_id': next(i for i in range(n) if sp.IsUnknown(i)),
                       'byte_fallback': True, 'vocab': [[p, sp.GetScore(i)] for i, p in enumerate(pieces)]}
    with open(out, 'w', encoding='utf-8') as f:
        json.dump(tj, f, ensure_ascii=False)


def varint(x):
    if x < 0:
        x += 1 << 64
    b = bytearray()
    while True:
        c = x & 0x7F
        x >>= 7
        if x:
            b.append(c | 0x80)
        else:
            b.append(c)
            return bytes(b)


def field(num, wire, payload):
    tag = varint(num << 3 | wire)
    if wire == 0:
        return tag + varint(payload)
    if wire == 2:
        return tag + varint(len(payload)) + payload
    return tag + payload


def cmd_tomodel(args):
    import struct
    src, out = args
    with open(src, encoding='utf-8') as f:
        tj = json.load(f)
    m = tj['model']
    assert m.get('type', 'Unigram') == 'Unigram'
    norm = tj['normalizer']
    steps = norm['normalizers'] if norm.get('type') == 'Sequence' else [norm]
    charsmap = next(base64.b64decode(s['precompiled_charsmap']) for s in steps if s['type'] == 'Precompiled')
    specials = {a['content']: a['id'] for a in tj['added_tokens']}
    body = b''
    for i, (piece, score) in enumerate(m['vocab']):
        kind = 2 if i == m['unk_id'] else 3 if piece in specials and specials[piece] == i else 1
        msg = field(1, 2, piece.encode('utf-8')) + field(2, 5, struct.pack('<f', score))
        if kind != 1:
            msg += field(3, 0, kind)
        body += field(1, 2, msg)
    trainer = field(3, 0, 1) + field(40, 0, m['unk_id']) + field(41, 0, -1) + field(42, 0, specials['</s>']) + \
        field(43, 0, specials['<pad>'])
    normspec = field(1, 2, b'nmt_nfkc') + field(2, 2, charsmap) + field(3, 0, 1) + field(4, 0, 1)
    body += field(2, 2, trainer) + field(3, 2, normspec)
    with open(out, 'wb') as f:
        f.write(body)


if __name__ == '__main__':
    cmds = {'ids': cmd_ids, 'tojson': cmd_tojson, 'tomodel': cmd_tomodel}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](sys.argv[2:])
