"""What kerasrnn's models become outside Keras.

The exporters build on `kerasrnn.seq2seq` (its decoders, specs and
vocabulary), which never imports this package as it loads: its
`export_serving`, `StringSeq2Seq` and `export_litert` come from here on
first use. Importing this package imports none of its modules.

- `converter`: the LiteRT converter as every exporter uses it (argument
  checks, freezing, builtin ops only, the check that the file runs, atomic
  writes, operator counts);
- `rewrites`: the edits of every converted LiteRT file, named in one list;
- `flatbuffer_edits`: the schema operations those edits share;
- `variable_tensors`: the states of LiteRT's stateful operators zeroed at
  the start of every call;
- `projected_lookup`: an embedding lookup and its projection as one lookup
  of the projected table;
- `rnn_loop`: Keras's recurrent layers stepped through loops LiteRT runs;
- `paired_lstm`: a Bidirectional LSTM's two directions stepped together;
- `fused_lstm`: LSTM layers as LiteRT's fused LSTM sequence operator;
- `fused_rnn`: Elman layers as LiteRT's fused RNN sequence operator;
- `cell_litert`: `kerasrnn.export_litert`, recurrent Keras models as LiteRT
  files;
- `seq2seq_litert`: `kerasrnn.seq2seq.export_litert`, an encoder-decoder
  and its beam search as a LiteRT file with `vocabulary.json`;
- `seq2seq_savedmodel`: `kerasrnn.seq2seq.export_serving`, a string-in,
  string-out SavedModel.
"""
