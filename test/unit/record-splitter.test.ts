import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { keyCount, RecordSplitter } from '../../src/import/record-splitter.js'

/**
 * The splitter cuts a data file's text into records for JSON.parse, whatever the chunk
 * boundaries: inside strings, escapes, numbers or between records.
 */

interface Split {
  outer: string
  arrays: number
  records: { text: string; colons: number }[]
}

function split(chunks: readonly string[]): Split {
  const result: Split = { outer: '', arrays: 0, records: [] }
  const splitter = new RecordSplitter({
    outer: (text) => (result.outer += text),
    arrayOpened: () => result.arrays++,
    record: (text, colons) => result.records.push({ text, colons }),
  })
  for (const chunk of chunks) splitter.write(chunk)
  splitter.end()
  return result
}

/** Every way of cutting `text` in two, and in pieces of one character. */
function cuts(text: string): string[][] {
  const all: string[][] = [[text], [...text]]
  for (let i = 1; i < text.length; i++) all.push([text.slice(0, i), text.slice(i)])
  return all
}

const FILE = String.raw`{ "users" : [ {"username": "a:\"b\\", "x": {"y": [1, {"z": null}]}},
  "str\"ing]" , 12.5e3 ,true,null, [ {"k": 1} ] ],
  "folders": [], "files": [{"name": "}{][:,"}]}`

describe('RecordSplitter', () => {
  it('finds the records and the text around them, whatever the chunks', () => {
    const expected: Split = {
      outer: `{ "users" : [  0,\n   0 ,  0 , 0, 0,  0 ],\n  "folders": [], "files": [ 0]}`,
      arrays: 3,
      records: [
        { text: String.raw`{"username": "a:\"b\\", "x": {"y": [1, {"z": null}]}}`, colons: 4 },
        { text: String.raw`"str\"ing]"`, colons: 0 },
        { text: '12.5e3', colons: 0 },
        { text: 'true', colons: 0 },
        { text: 'null', colons: 0 },
        { text: '[ {"k": 1} ]', colons: 1 },
        { text: '{"name": "}{][:,"}', colons: 1 },
      ],
    }
    for (const chunks of cuts(FILE)) assert.deepEqual(split(chunks), expected, JSON.stringify(chunks))
  })

  it('counts one colon per key, so a parsed record that lost one had a key twice', () => {
    for (const { text, colons } of split([FILE]).records)
      assert.equal(keyCount(JSON.parse(text)), colons, text)
    const [twice] = split(['{"users": [{"a": 1, "b": {"c": 2, "c": 3}}]}']).records
    assert.ok(twice !== undefined)
    assert.equal(twice.colons, 4)
    assert.equal(keyCount(JSON.parse(twice.text)), 3)
  })

  it('leaves text that is not records to the parser: other shapes, records run together', () => {
    assert.deepEqual(split(['[{"a": 1}]']), { outer: '[{"a": 1}]', arrays: 0, records: [] })
    assert.deepEqual(split(['{"users": {"a": [1]}}']), {
      outer: '{"users": {"a": [1]}}',
      arrays: 0,
      records: [],
    })
    const together = split(['{"users": [{}{} 1 2]}'])
    assert.equal(together.outer, '{"users": [ 0 0  0  0]}')
    assert.deepEqual(
      together.records.map((r) => r.text),
      ['{}', '{}', '1', '2'],
    )
  })

  it('names a record as open until its end', () => {
    const splitter = new RecordSplitter({
      outer: () => undefined,
      arrayOpened: () => undefined,
      record: () => undefined,
    })
    splitter.write('{"folders": [{"name": "x')
    assert.equal(splitter.inRecord, true)
    splitter.write('"}, ')
    assert.equal(splitter.inRecord, false)
  })
})
