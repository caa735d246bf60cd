export function bmv2StfUnavailable(): string | undefined {
  return "not yet";
}
export async function runStfOnBmv2(_json: string, _stf: string): Promise<{ passed: boolean; failures: string[] }> {
  return { passed: false, failures: [] };
}
