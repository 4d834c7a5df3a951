/**
 * Tables that read at a phone's width without scrolling sideways: at 390 px the stylesheet shows each row as a
 * card and each cell on its own line, led by its column's name. That name comes from a `data-label` attribute
 * on every body cell, copied here from the table's `<th scope="col">` headers when the page is sent — so no
 * page restates its column names cell by cell, and a page that adds a column gets its label for free.
 * It rewrites only the console's own markup (Html.ts escapes every value, so `<` never comes from data).
 */

const TABLE = /<table\b[^>]*>[\s\S]*?<\/table>/g
const HEAD = /<thead\b[^>]*>([\s\S]*?)<\/thead>/
const HEADER_CELL = /<th\b[^>]*>([\s\S]*?)<\/th>/g
const ROW = /<tr\b[^>]*>[\s\S]*?<\/tr>/g
const CELL_OPENING = /<(td|th)\b([^>]*)>/g
const COLSPAN = /\bcolspan="(\d+)"/

/** A header's text, as it stands in the markup (entities kept: it goes back into an attribute). */
const textOf = (markup: string): string => markup.replace(/<[^>]*>/g, "").replace(/\s+/g, " ").trim()

const labelRows = (table: string): string => {
  const head = HEAD.exec(table)
  if (head === null) return table
  const labels = [...(head[1] ?? "").matchAll(HEADER_CELL)].map((m) => textOf(m[1] ?? ""))
  const headEnd = (head.index ?? 0) + head[0].length
  const body = table.slice(headEnd).replace(ROW, (row) => {
    let column = 0
    return row.replace(CELL_OPENING, (opening: string, tag: string, attributes: string) => {
      const span = Number(COLSPAN.exec(attributes)?.[1] ?? "1")
      const label = span === 1 ? labels[column] ?? "" : ""
      column += span
      return label === "" || attributes.includes("data-label=") ? opening : `<${tag} data-label="${label}"${attributes}>`
    })
  })
  return table.slice(0, headEnd) + body
}

export const labelTableCells = (page: string): string => page.includes("<thead") ? page.replace(TABLE, labelRows) : page
