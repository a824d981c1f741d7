import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { Page } from 'playwright-core'

/**
 * axe-core's accessibility rules run on a rendered page. Its source is evaluated in the
 * page through the DevTools protocol, which the page's CSP does not govern (a script tag
 * would be refused, as it should be).
 */

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  targets: string[]
}

/** The violations of serious or critical impact on the page as it is now. */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE)
  const violations = await page.evaluate(async () => {
    interface AxeResult {
      id: string
      impact?: string | null
      help: string
      nodes: { target: unknown[] }[]
    }
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeResult[] }> } }).axe
    const result = await axe.run()
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? null,
      help: v.help,
      targets: v.nodes.map((node) => node.target.join(' ')),
    }))
  })
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
}
