import { DEFAULT_RUN_OPTIONS, startRun } from "./agent.js";
import type { BuildContext } from "./context.js";
import { startDeployment } from "./deployments.js";
import { addCustomDomain } from "./domain.js";
import { createProject } from "./projects.js";
import { DAY, HOUR, iso, round, type Json, type NewProjectFields, type SimProject, type Table } from "./state.js";

/**
 * The demo account every simulator starts with: five projects in different states, dated before
 * the simulator's start. Nothing is charged while seeding. Needs every area registered (it advances
 * projects through their steps).
 */
export function seedDemoData(ctx: BuildContext): void {
  ctx.seeding = true;
  const t = ctx.t0;

  const acme = seedProject(ctx, "acme-storefront", t - 120 * DAY, {
    label: "Acme Storefront",
    description: "Online store for Acme outdoor gear with catalog, cart and checkout",
  });
  const storePrompt = "Build an online store for outdoor gear with a product catalog, a cart and a checkout page";
  seedRun(ctx, acme, storePrompt, t - 120 * DAY + HOUR);
  seedRun(ctx, acme, "Add a customers admin page and an orders table with status filters", t - 90 * DAY);
  seedRun(ctx, acme, "Make the home page hero brighter and add customer reviews", t - 12 * DAY);
  startDeployment(ctx, acme, t - 11 * DAY, false);
  addCustomDomain(acme, "shop.acme-demo.com", t - 11 * DAY + HOUR);
  acme.tables = demoTables(() => ctx.newId(), t - 90 * DAY);

  const empty = seedProject(ctx, "empty-sandbox", t - 75 * DAY, { description: "Empty project, nothing built yet" });
  ctx.advance(empty, t - 74 * DAY);
  empty.server = { status: "Archived", readyAt: empty.server.readyAt };

  const campaign = seedProject(ctx, "spring-campaign", t - 40 * DAY, {
    label: "Spring campaign",
    description: "Landing page for the spring marketing campaign",
    groupId: "grp_marketing",
  });
  seedRun(
    ctx,
    campaign,
    "Create a landing page for our spring sale with a newsletter signup form",
    t - 40 * DAY + HOUR,
  );

  const dashboard = seedProject(ctx, "internal-dashboard", t - 20 * DAY, {
    label: "Internal dashboard",
    description: "Sales dashboard for the internal team",
    groupId: "grp_internal",
  });
  dashboard.secrets = [
    { _id: ctx.newId(), secretName: "DATABASE_URL", secretValue: "postgres://demo:demo@db/sales", environment: "both" },
    {
      _id: ctx.newId(),
      secretName: "SENDGRID_API_KEY",
      secretValue: "SG.demo-secret-value",
      environment: "production",
    },
  ];
  const dashboardPrompt = "Build a sales dashboard with charts of monthly revenue and a weekly email report";
  seedRun(ctx, dashboard, dashboardPrompt, t - 20 * DAY + HOUR);
  startDeployment(ctx, dashboard, t - 19 * DAY, false);

  const booking = seedProject(ctx, "booking-app", t - 3 * DAY, {
    description: "Appointment booking for a hair salon",
  });
  seedRun(ctx, booking, "Build an appointment booking app for a hair salon with a calendar view", t - 3 * DAY + HOUR);
  startDeployment(ctx, booking, t - 2 * DAY, true);

  for (const p of ctx.projects.values()) ctx.advance(p, t);
  ctx.seeding = false;
}

function seedProject(
  ctx: BuildContext,
  projectId: string,
  at: number,
  fields: Omit<NewProjectFields, "projectId">,
): SimProject {
  return createProject(ctx, { projectId, ...fields }, at);
}

function seedRun(ctx: BuildContext, p: SimProject, prompt: string, at: number): void {
  startRun(ctx, p, prompt, at, { ...DEFAULT_RUN_OPTIONS }, []);
  ctx.advance(p, at + 2 * HOUR);
}

const FIRST_NAMES = ["Ana", "Ben", "Chloe", "Diego", "Emma", "Farid", "Grace", "Hugo", "Iris", "Jonas"];
const LAST_NAMES = ["Lopez", "Smith", "Novak"];
const COUNTRIES = ["ES", "US", "DE", "FR", "GB"];
const ORDER_STATUSES = ["pending", "paid", "shipped", "delivered", "refunded"];

function demoTables(newId: () => string, since: number): Table[] {
  const customers: Json[] = Array.from({ length: 30 }, (_, i) => {
    const name = `${FIRST_NAMES[i % 10]} ${LAST_NAMES[Math.floor(i / 10)]}`;
    return {
      _id: newId(),
      name,
      email: `${name.toLowerCase().replace(" ", ".")}@example.com`,
      country: COUNTRIES[i % COUNTRIES.length],
      vip: i % 7 === 0,
      createdAt: iso(since + i * DAY),
    };
  });
  const orders: Json[] = Array.from({ length: 30 }, (_, i) => ({
    _id: newId(),
    customer: customers[(i * 7) % 30]._id,
    total: round(19.9 + ((i * 37) % 250)),
    status: ORDER_STATUSES[i % ORDER_STATUSES.length],
    createdAt: iso(since + (i + 5) * DAY),
  }));
  const customersId = newId();
  return [
    {
      _id: customersId,
      type: "customers",
      label: "Customers",
      description: "People who bought from the store",
      properties: [
        { id: newId(), name: "name", propertyType: "string", label: "Name" },
        { id: newId(), name: "email", propertyType: "string", label: "Email" },
        { id: newId(), name: "country", propertyType: "options", label: "Country" },
        { id: newId(), name: "vip", propertyType: "boolean", label: "VIP" },
      ],
      records: customers,
    },
    {
      _id: newId(),
      type: "orders",
      label: "Orders",
      description: "Orders placed in the store",
      properties: [
        {
          id: newId(),
          name: "customer",
          propertyType: "objectReference",
          label: "Customer",
          objectReference: { objectReferenceTypeId: customersId, objectReferenceRelation: "manyToOne" },
        },
        { id: newId(), name: "total", propertyType: "number", label: "Total (EUR)" },
        { id: newId(), name: "status", propertyType: "options", label: "Status" },
      ],
      records: orders,
    },
  ];
}
