// A destination that answers like a payment processor, after $delay_ms milliseconds (a real
// processor is 50-300 ms away; the benchmark's default is 20 ms).
function reply(r) {
  setTimeout(function () {
    r.headersOut['Content-Type'] = 'application/json';
    r.return(200, '{"id":"ch_123","status":"succeeded","amount":1000}');
  }, Number(r.variables.delay_ms));
}
export default { reply };
