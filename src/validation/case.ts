/** snake_case → camelCase: `asset_id` → `assetId`, the key form the spec's error maps use. */
export function snakeToCamel (s: string): string {
  return s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())
}
