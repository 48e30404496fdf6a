// Streams a Responses answer from the hermes API server with the official
// openai npm client, two ways: responses.create({stream: true}) (the raw
// events) and responses.stream() (the SDK's accumulating helper, which
// checks the event sequence). Prints one JSON object with what it saw.
// Environment: HERMES_API_BASE (http://host:port/v1), HERMES_API_KEY.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.HERMES_API_BASE, apiKey: process.env.HERMES_API_KEY, maxRetries: 0 });

const types = [];
const sequence = [];
const deltas = [];
let completed = null;
const stream = await client.responses.create({ model: "hermes-agent", input: "count", stream: true });
for await (const event of stream) {
  types.push(event.type);
  sequence.push(event.sequence_number);
  if (event.type === "response.output_text.delta") deltas.push(event.delta);
  if (event.type === "response.completed") completed = event.response;
}

const helper = client.responses.stream({ model: "hermes-agent", input: "again", previous_response_id: completed.id });
const helperDeltas = [];
helper.on("response.output_text.delta", (e) => helperDeltas.push(e.delta));
const final = await helper.finalResponse();

console.log(JSON.stringify({
  types, sequence, deltas,
  completedID: completed.id, completedStatus: completed.status,
  completedText: completed.output?.[0]?.content?.[0]?.text,
  helperDeltas, finalText: final.output_text, finalStatus: final.status,
}));
