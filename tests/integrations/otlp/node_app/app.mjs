// A LangChain.js RAG chain (retriever | prompt | chat model | parser), traced by OpenInference's
// LangChain.js instrumentation and exported over OTLP/HTTP (protobuf) to the URL in
// OTLP_TRACES_URL, inside an app span. It prints {"trace_id", "span_id", "answer"} of that span.
// The chat model is LangChain's FakeListChatModel, answering ANSWER: no network but loopback.
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { Document } from "@langchain/core/documents";
import { StringOutputParser } from "@langchain/core/output_parsers";
import { ChatPromptTemplate } from "@langchain/core/prompts";
import { BaseRetriever } from "@langchain/core/retrievers";
import { RunnablePassthrough, RunnableSequence } from "@langchain/core/runnables";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";

const CORPUS = [
  "The Eiffel Tower in Paris is 330 metres tall; it was built in 1887-1889.",
  "Python was created by Guido van Rossum and first released in 1991.",
  "Mount Everest is 8,849 metres high, on the border of Nepal and China.",
].map((text, i) => new Document({ pageContent: text, id: `doc-${i}` }));

class KeywordRetriever extends BaseRetriever {
  lc_namespace = ["refcheck", "test"];

  async _getRelevantDocuments(query) {
    const words = new Set(query.toLowerCase().split(/\s+/));
    return CORPUS.filter((d) => d.pageContent.toLowerCase().split(/\s+/).some((w) => words.has(w))).slice(0, 1);
  }
}

const provider = new NodeTracerProvider({
  spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: process.env.OTLP_TRACES_URL }))],
});
provider.register();
new LangChainInstrumentation({ tracerProvider: provider }).manuallyInstrument(CallbackManagerModule);

const prompt = ChatPromptTemplate.fromMessages([
  ["system", "Answer from this context only:\n{context}"],
  ["human", "{question}"],
]);
const chain = RunnableSequence.from([
  {
    context: new KeywordRetriever().pipe((docs) => docs.map((d) => d.pageContent).join("\n")),
    question: new RunnablePassthrough(),
  },
  prompt,
  new FakeListChatModel({ responses: [process.env.ANSWER] }),
  new StringOutputParser(),
]);

const tracer = provider.getTracer("langchainjs-app");
const printed = await tracer.startActiveSpan("POST /ask", async (span) => {
  const answer = await chain.invoke(process.env.QUESTION);
  span.end();
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId, answer };
});
await provider.forceFlush();
await provider.shutdown();
console.log(JSON.stringify(printed));
