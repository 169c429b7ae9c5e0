// Draws each case with badge-maker and prints, as JSON, the badge's width and
// each text's centre and textLength (badge-maker draws text at ten times the
// size and scales it by .1; these are in the badge's own pixels).
import { makeBadge } from 'badge-maker'

const styles = ['flat', 'flat-square', 'plastic', 'for-the-badge']

// [label, message, labelColor]: ASCII, digits, wide (W, m) and narrow (i, l)
// letters, every printable ASCII character, white space shields trims,
// Latin, Greek and Arabic letters Verdana has, and CJK and emoji it lacks
// (measured as "m"). No "ß" or ligatures: JavaScript upper-cases them to
// two letters for for-the-badge, Go to one.
const cases = [
  ['hits', '1,234'],
  ['hits', '12k'],
  ['hits', '0'],
  ['views', '9,223,372,036,854,775,807'],
  ['page views', '12 / 3,456'],
  ['WWW', 'mmm'],
  ['iii', 'lll'],
  ['', '42'],
  ['', '42', 'blue'],
  ['hits', ''],
  ['hits', 'not found'],
  ['hits', 'rate limited'],
  ['  hits\t', ' 7 '],
  ['ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'],
  ['!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', '0123456789'],
  ['<a href="x">&amp;</a>', ']]>'],
  ['Zähler', '1 234 €'],
  ['Besucher äöü', '١٢٣'],
  ['Ωμέγα', 'ÇçĞğ'],
  ['访问', '🎉 7'],
]

const num = s => Number(s) / 10
const out = []
for (const style of styles) {
  for (const [label, message, labelColor] of cases) {
    const svg = makeBadge(labelColor ? { label, message, labelColor, style } : { label, message, style })
    const width = Number(/<svg [^>]*width="([^"]+)"/.exec(svg)[1])
    const texts = []
    for (const [, attrs, content] of svg.matchAll(/<text ([^>]*)>([^<]*)</g)) {
      if (attrs.includes('fill-opacity')) continue // shadows
      if (content === '') continue // draws nothing; Render leaves it out
      texts.push({
        x: num(/\bx="([^"]+)"/.exec(attrs)[1]),
        textLength: num(/textLength="([^"]+)"/.exec(attrs)[1]),
      })
    }
    out.push({ style, label, message, labelColor: labelColor || '', width, texts })
  }
}
// One case a line, so that a change shows as the cases it changed.
console.log(`[\n${out.map(o => JSON.stringify(o)).join(',\n')}\n]`)
