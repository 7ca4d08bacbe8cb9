// RUN: kiln-opt --split-input-file --verify-diagnostics %s

// The kiln.* attributes passes exchange are declared (KilnAttrNames.h) and checked.
func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{carries unknown attribute 'kiln.layuot'}}
  %y = kiln.linear %x weight "w" format f32 {kiln.layuot = "r16"} : tensor<?x64xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

func.func @f(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{attribute 'kiln.layout' must be one of "r16", "r32", "rows64", "block"}}
  %y = kiln.linear %x weight "w" format f32 {kiln.layout = "r8"} : tensor<?x64xf32> -> tensor<?x64xf32>
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
