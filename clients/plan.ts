// plan.ts is type-checked (tsc --noEmit, make clients) against the types
// openapi-typescript generates from the spec: an apply plan as the server
// sends it must be a value of them, the from and to of its changes any JSON
// value.
import type { components } from "./gen/sluice";

type ApplyPlan = components["schemas"]["server.ApplyPlan"];
type FieldChange = components["schemas"]["server.FieldChange"];

const changes: FieldChange[] = [
  { field: "threshold", from: 100, to: 250 },
  { field: "description", from: "", to: "sale cap" },
  { field: "enabled", from: true, to: false },
  { field: "app", from: null, to: "checkout" },
];

export const plan: ApplyPlan = {
  dryRun: true,
  created: [],
  updated: [{ name: "orders-qps", kind: "flow", resource: "GET:/api/orders", changes }],
  deleted: [],
  unchanged: [],
};

// The fields the server always sends are required in the types: a client
// reads them without a check for undefined.
export function updatedFields(p: ApplyPlan): string[] {
  return p.updated.map((u) => `${u.name}: ${u.changes.map((c) => c.field).join(", ")}`);
}
