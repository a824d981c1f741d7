import type { FolderPage } from '../client/index.js'

/**
 * A pager, above and below the list: first, previous, next and last follow the listing's
 * Link header (previous and next carry its cursor), and a page number jumps to any page.
 * Both are copies of index.html's `<template id="pager">`.
 */

export interface Pager {
  nav: HTMLElement
  first: HTMLAnchorElement
  prev: HTMLAnchorElement
  next: HTMLAnchorElement
  last: HTMLAnchorElement
  number: HTMLInputElement
  of: HTMLElement
}

function part<T extends Element>(root: ParentNode, selector: string): T {
  const found = root.querySelector<T>(selector)
  if (found === null) throw new Error(`the pager template lacks ${selector}`)
  return found
}

/** Fills `nav` with a copy of the template; `jump` is called with a page number in range. */
export function makePager(
  nav: HTMLElement,
  template: HTMLTemplateElement,
  jump: (page: number) => void,
): Pager {
  nav.replaceChildren(template.content.cloneNode(true))
  const pager: Pager = {
    nav,
    first: part(nav, 'a.first'),
    prev: part(nav, 'a.prev'),
    next: part(nav, 'a.next'),
    last: part(nav, 'a.last'),
    number: part(nav, 'input.page-number'),
    of: part(nav, '.of'),
  }
  part<HTMLFormElement>(nav, 'form').addEventListener('submit', (event) => {
    event.preventDefault() // the CSP allows no form submission: the page navigates itself
    const page = pager.number.valueAsNumber
    if (Number.isInteger(page) && pager.number.checkValidity()) jump(page)
    else pager.number.reportValidity()
  })
  return pager
}

/**
 * A link with nowhere to go loses its href; the stylesheet keeps its place empty
 * (`visibility: hidden`, out of the tab order and the accessibility tree), so the pager's
 * parts do not move sideways from page to page.
 */
function setLink(
  anchor: HTMLAnchorElement,
  href: string | undefined,
  hrefOf: (link: string) => string,
): void {
  if (href === undefined) anchor.removeAttribute('href')
  else anchor.href = hrefOf(href)
}

/** Hides the pager and empties it (signed out: nothing of the last listing stays in it). */
export function clearPager(pager: Pager): void {
  pager.nav.hidden = true
  for (const link of [pager.first, pager.prev, pager.next, pager.last]) link.removeAttribute('href')
  pager.number.value = ''
  pager.of.textContent = ''
}

/** The pages of a listing: ceil(total / limit), at least one. */
export function pageCount(page: FolderPage): number {
  return Math.max(1, Math.ceil(page.body.total / page.body.limit))
}

/**
 * Shows the pager for `page` (hidden when there is one page only); `hrefOf` turns a Link
 * target into the browser's own link. First and last are left out on those pages.
 * `relisted`: the same view listed again (a live change), not a page gone to.
 */
export function showPager(
  pager: Pager,
  page: FolderPage,
  hrefOf: (link: string) => string,
  relisted: boolean,
): void {
  const { page: number } = page.body
  const count = pageCount(page)
  pager.nav.hidden = count === 1 && number === 1
  setLink(pager.first, number > 1 ? page.links.first : undefined, hrefOf)
  setLink(pager.prev, page.links.prev, hrefOf)
  setLink(pager.next, page.links.next, hrefOf)
  setLink(pager.last, number < count ? page.links.last : undefined, hrefOf)
  pager.number.max = String(count)
  // The field shows where the reader is, unless they are typing a page to go to while a
  // live change lists the same page again. Going to a page (a jump, Back, a link) always
  // sets it: after a jump the focus stays in the field, and Back must not leave the old number.
  if (!relisted || document.activeElement !== pager.number) pager.number.value = String(number)
  pager.number.setAttribute('aria-label', `Page, 1 to ${count}`)
  pager.of.textContent = `of ${count}`
}
