// RUN: kiln-opt --split-input-file --verify-diagnostics %s

// The kiln.* attributes passes exchange are declared (KilnAttrNames.h) and checked.
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{carries unknown attribute 'kiln.layuot'}}
  %y = kiln.linear %x weight "w" format f32 {kiln.layuot = "r16"} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{attribute 'kiln.layout' must be a #kiln.layout, got "r16"}}
  %y = kiln.linear %x weight "w" format f32 {kiln.layout = "r16"} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{attribute 'kiln.row_align' must be a power of two >= 64}}
  %y = kiln.linear %x weight "w" format f32 {kiln.row_align = 96 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{attribute 'kiln.token_panel' must be a positive integer}}
  %y = kiln.linear %x weight "w" format f32 {kiln.token_panel = 0 : i64} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+2 {{expected ::kiln::Layout to be one of: block, rows64, r16, r32}}
  // expected-error @+1 {{failed to parse Kiln_LayoutAttr parameter 'value'}}
  %y = kiln.linear %x weight "w" format f32 {kiln.layout = #kiln.layout<r8>} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Derived-weight recipes (models/weights/DerivedWeights.h): the op's fields, typed.
// expected-error @+1 {{derived weight 'w2': the recipe scale needs 'factor' (a float)}}
module attributes {kiln.derived_weights = {w2 = {op = "scale", source = "w"}}} {}

// -----

// expected-error @+1 {{derived weight 'w2': the recipe has no known 'op'}}
module attributes {kiln.derived_weights = {w2 = {op = "transpose", source = "w"}}} {}

// -----

// expected-error @+1 {{derived weight 'qkv': the recipe interleave_rows needs 'sources' (two weight names)}}
module attributes {kiln.derived_weights = {qkv = {op = "interleave_rows", sources = ["q", "k", "v"]}}} {}

// -----

// expected-error @+1 {{derived weight 'w2': the recipe has a field 'factor' that select_rows does not take}}
module attributes {kiln.derived_weights = {w2 = {op = "select_rows", source = "w", indices = array<i64: 0>, factor = 2.0 : f32}}} {}

// -----

// expected-error @+1 {{derived weight 'wq': the recipe rotate_rows needs 'seed' (an integer)}}
module attributes {kiln.derived_weights = {wq = {op = "rotate_rows", source = "w", seed = "one"}}} {}

// -----

// expected-error @+1 {{attribute 'kiln.pass_effects' must be a dictionary from pass names to "key=value,..." strings}}
module attributes {kiln.pass_effects = {"kiln-prune-layers" = "removed 2"}} {}
