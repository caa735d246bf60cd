// The subset of p4c's BMv2 JSON (format 2.x, behavioral-model docs/JSON_format.md)
// that the software switch executes.

export interface TypedValue {
  type: string;
  value: unknown;
  mask?: unknown;
  bitwidth?: number;
}

export interface ExpressionNode {
  op: string;
  left: TypedValue | null;
  right: TypedValue | null;
  cond?: TypedValue;
}

export interface HeaderType {
  name: string;
  id: number;
  fields: Array<[string, number | "*", boolean?]>;
  /** bytes of the header at most, when it has a variable-length field */
  max_length?: number;
}

export interface HeaderInstance {
  name: string;
  id: number;
  header_type: string;
  metadata: boolean;
}

export interface ParserOp {
  op: string;
  parameters: TypedValue[];
}

export interface ParseTransition {
  type: string;
  value: string | null;
  mask: string | null;
  next_state: string | null;
}

export interface ParseState {
  name: string;
  id: number;
  parser_ops: ParserOp[];
  transition_key: TypedValue[];
  transitions: ParseTransition[];
}

export interface Parser {
  name: string;
  id: number;
  init_state: string;
  parse_states: ParseState[];
}

export interface Deparser {
  name: string;
  id: number;
  order: string[];
  primitives?: Primitive[];
}

export interface Primitive {
  op: string;
  parameters: TypedValue[];
}

export interface Action {
  name: string;
  id: number;
  runtime_data: Array<{ name: string; bitwidth: number }>;
  primitives: Primitive[];
}

export interface TableKey {
  match_type: string;
  name?: string;
  target: [string, string] | string;
  mask: string | null;
}

export interface TableEntryJson {
  match_key: Array<{ match_type: string; key?: string | boolean; mask?: string; prefix_length?: number; start?: string; end?: string }>;
  action_entry: { action_id: number; action_data: string[] };
  priority?: number;
}

export interface Table {
  name: string;
  id: number;
  match_type: string;
  type: string;
  max_size: number;
  with_counters: boolean;
  support_timeout: boolean;
  direct_meters: string | null;
  /** an indirect table's action profile */
  action_profile?: string;
  key: TableKey[];
  action_ids: number[];
  actions: string[];
  base_default_next: string | null;
  next_tables: Record<string, string | null>;
  default_entry?: { action_id: number; action_const?: boolean; action_data: string[]; action_entry_const?: boolean };
  entries?: TableEntryJson[];
}

export interface Conditional {
  name: string;
  id: number;
  expression: TypedValue;
  true_next: string | null;
  false_next: string | null;
}

export interface Pipeline {
  name: string;
  id: number;
  init_table: string | null;
  tables: Table[];
  action_profiles: Array<{ name: string; id: number; max_size: number; selector?: unknown }>;
  conditionals: Conditional[];
  action_calls?: unknown[];
}

export interface Calculation {
  name: string;
  id: number;
  algo: string;
  input: TypedValue[];
}

export interface LearnList {
  id: number;
  name: string;
  elements: TypedValue[];
}

export interface Checksum {
  name: string;
  id: number;
  target: [string, string];
  type: string;
  calculation: string;
  update?: boolean;
  verify?: boolean;
  if_cond: TypedValue | null;
}

export interface FieldList {
  id: number;
  name: string;
  elements: TypedValue[];
}

export interface Bmv2Json {
  __meta__?: { version: [number, number]; compiler?: string };
  header_types: HeaderType[];
  headers: HeaderInstance[];
  header_stacks: unknown[];
  header_union_types?: unknown[];
  header_unions?: unknown[];
  header_union_stacks?: unknown[];
  /** the metadata a clone, resubmit or recirculate preserves, by id */
  field_lists?: FieldList[];
  errors: Array<[string, number]>;
  enums?: unknown[];
  parsers: Parser[];
  parse_vsets?: unknown[];
  deparsers: Deparser[];
  meter_arrays: Array<{ name: string; id: number; size: number; is_direct: boolean; rate_count: number; type: string; binding?: string; result_target?: [string, string] }>;
  counter_arrays: Array<{ name: string; id: number; size: number; is_direct: boolean; binding?: string }>;
  register_arrays: Array<{ name: string; id: number; size: number; bitwidth: number }>;
  calculations: Calculation[];
  learn_lists: LearnList[];
  actions: Action[];
  pipelines: Pipeline[];
  checksums: Checksum[];
  force_arith?: unknown[];
  extern_instances?: unknown[];
  field_aliases?: Array<[string, [string, string]]>;
  program?: string;
}
