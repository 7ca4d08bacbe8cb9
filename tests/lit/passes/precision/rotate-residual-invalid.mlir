// RUN: kiln-opt --kiln-rotate-residual %s -split-input-file -verify-diagnostics

// A stream of 36 has no Hadamard matrix of that order here (96 = 12 x 8 would).
func.func @width(%tok: tensor<?xi32>) -> tensor<?x512xf32> {
  // expected-error @+1 {{the residual stream is 36 wide: no Hadamard matrix of that order here}}
  %x = kiln.embed %tok weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x36xf32>
  %f = kiln.rms_norm %x weight "output_norm.weight" eps 1.0e-05 : tensor<?x36xf32>
  %l = kiln.logits %f weight "output.weight" format f32 : tensor<?x36xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}

// -----

// A tied classifier would need a second, differently rotated table.
func.func @tied(%tok: tensor<?xi32>) -> tensor<?x512xf32> {
  %x = kiln.embed %tok weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  %f = kiln.rms_norm %x weight "output_norm.weight" eps 1.0e-05 : tensor<?x64xf32>
  // expected-error @+1 {{the classifier shares the embedding table 'token_embd.weight'}}
  %l = kiln.logits %f weight "token_embd.weight" format f32 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}

// -----

// Something other than rms_norm and add reads the stream.
func.func @other_reader(%tok: tensor<?xi32>) -> tensor<?x64xf32> {
  %x = kiln.embed %tok weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  // expected-error @+1 {{reads the residual stream: only rms_norm and add may}}
  %s = kiln.silu %x : tensor<?x64xf32>
  return %s : tensor<?x64xf32>
}

// -----

// What is added to the stream must be one linear's output.
func.func @add_not_linear(%tok: tensor<?xi32>, %y: tensor<?x64xf32>) -> tensor<?x512xf32> {
  %x = kiln.embed %tok weight "token_embd.weight" format f32 : tensor<?xi32> -> tensor<?x64xf32>
  // expected-error @+1 {{adds to the residual stream a value that is not one linear's output}}
  %h = kiln.add %x, %y : tensor<?x64xf32>
  %f = kiln.rms_norm %h weight "output_norm.weight" eps 1.0e-05 : tensor<?x64xf32>
  %l = kiln.logits %f weight "output.weight" format f32 : tensor<?x64xf32> -> tensor<?x512xf32>
  return %l : tensor<?x512xf32>
}
