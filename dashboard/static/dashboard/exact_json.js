// JSON.parse that keeps integers past 2**53 exact, as their digits (a string).
// A priority is any int64 and a websocket client's id any integer, but a
// Number rounds 2**53 + 1 to 2**53: a row would name a priority no rule gives
// and an id its frontend never sent. Every use of these values is as text
// (or clamped, as a priority's colour is), so digits serve where a Number
// did. Only a text with a 16-digit run, which nothing else in the
// inspector's frames has, pays for the reviver.

const LONG_DIGITS = /\d{16}/;
const INTEGER = /^-?\d+$/;

function exact(key, value, context) {
  // `context.source` is the number as written (JSON.parse source text access).
  if (typeof value === "number" && !Number.isSafeInteger(value) && context && INTEGER.test(context.source)) {
    return context.source;
  }
  return value;
}

export function parseExact(text) {
  return LONG_DIGITS.test(text) ? JSON.parse(text, exact) : JSON.parse(text);
}
