import { geoDistance } from "d3-geo";

/**
 * Place context for a zoomed-in map, where the coastline alone says nothing: the nearest large
 * city and the cities inside the frame. A short hand-kept list (city centres, to 0.01°; facts, not
 * a data set), so the view stays small. Pure: no DOM.
 */

export interface Place {
  name: string;
  lat: number;
  lon: number;
}

const CITIES =
  "Madrid,40.42,-3.70;Barcelona,41.39,2.17;Valencia,39.47,-0.38;Seville,37.39,-5.98;Zaragoza,41.65,-0.89;" +
  "Málaga,36.72,-4.42;Bilbao,43.26,-2.93;Toledo,39.86,-4.03;Lisbon,38.72,-9.14;Porto,41.15,-8.61;" +
  "Paris,48.86,2.35;Lyon,45.76,4.84;Marseille,43.30,5.37;Toulouse,43.60,1.44;Bordeaux,44.84,-0.58;" +
  "Nantes,47.22,-1.55;Lille,50.63,3.06;Strasbourg,48.57,7.75;Nice,43.70,7.27;London,51.51,-0.13;" +
  "Birmingham,52.49,-1.89;Manchester,53.48,-2.24;Leeds,53.80,-1.55;Glasgow,55.86,-4.25;" +
  "Edinburgh,55.95,-3.19;Bristol,51.45,-2.59;Cardiff,51.48,-3.18;Belfast,54.60,-5.93;Dublin,53.35,-6.26;" +
  "Cork,51.90,-8.47;Brussels,50.85,4.35;Antwerp,51.22,4.40;Amsterdam,52.37,4.90;Rotterdam,51.92,4.48;" +
  "The Hague,52.08,4.30;Luxembourg,49.61,6.13;Berlin,52.52,13.40;Hamburg,53.55,9.99;Munich,48.14,11.58;" +
  "Cologne,50.94,6.96;Frankfurt,50.11,8.68;Stuttgart,48.78,9.18;Düsseldorf,51.23,6.77;Leipzig,51.34,12.37;" +
  "Dresden,51.05,13.74;Hanover,52.38,9.73;Nuremberg,49.45,11.08;Bremen,53.08,8.80;Zurich,47.38,8.54;" +
  "Geneva,46.20,6.14;Bern,46.95,7.45;Vienna,48.21,16.37;Prague,50.08,14.44;Warsaw,52.23,21.01;" +
  "Kraków,50.06,19.94;Budapest,47.50,19.04;Bratislava,48.15,17.11;Ljubljana,46.06,14.51;Zagreb,45.81,15.98;" +
  "Rome,41.90,12.50;Milan,45.46,9.19;Naples,40.85,14.27;Turin,45.07,7.69;Florence,43.77,11.26;" +
  "Venice,45.44,12.32;Bologna,44.49,11.34;Palermo,38.12,13.36;Copenhagen,55.68,12.57;Oslo,59.91,10.75;" +
  "Stockholm,59.33,18.07;Gothenburg,57.71,11.97;Helsinki,60.17,24.94;Tallinn,59.44,24.75;Riga,56.95,24.11;" +
  "Vilnius,54.69,25.28;Athens,37.98,23.73;Thessaloniki,40.64,22.94;Sofia,42.70,23.32;Bucharest,44.43,26.10;" +
  "Belgrade,44.79,20.45;Sarajevo,43.86,18.41;Tirana,41.33,19.82;Skopje,42.00,21.43;Valletta,35.90,14.51;" +
  "Istanbul,41.01,28.98;Ankara,39.93,32.86;Kyiv,50.45,30.52;Minsk,53.90,27.56;Moscow,55.76,37.62;" +
  "Saint Petersburg,59.94,30.31;Reykjavík,64.15,-21.94;Casablanca,33.57,-7.59;Rabat,34.02,-6.84;" +
  "Algiers,36.75,3.06;Tunis,36.81,10.18;Cairo,30.04,31.24;Lagos,6.52,3.38;Nairobi,-1.29,36.82;" +
  "Johannesburg,-26.20,28.05;Cape Town,-33.92,18.42;Dubai,25.20,55.27;Riyadh,24.71,46.68;Tehran,35.69,51.39;" +
  "Mumbai,19.08,72.88;Delhi,28.61,77.21;Bangalore,12.97,77.59;Singapore,1.35,103.82;Bangkok,13.76,100.50;" +
  "Jakarta,-6.21,106.85;Hong Kong,22.32,114.17;Shanghai,31.23,121.47;Beijing,39.90,116.41;" +
  "Seoul,37.57,126.98;Tokyo,35.68,139.69;Osaka,34.69,135.50;Manila,14.60,120.98;Sydney,-33.87,151.21;" +
  "Melbourne,-37.81,144.96;Auckland,-36.85,174.76;New York,40.71,-74.01;Boston,42.36,-71.06;" +
  "Washington,38.91,-77.04;Chicago,41.88,-87.63;Toronto,43.65,-79.38;Montreal,45.50,-73.57;" +
  "Atlanta,33.75,-84.39;Miami,25.76,-80.19;Houston,29.76,-95.37;Dallas,32.78,-96.80;Denver,39.74,-104.99;" +
  "Los Angeles,34.05,-118.24;San Francisco,37.77,-122.42;Seattle,47.61,-122.33;Vancouver,49.28,-123.12;" +
  "Mexico City,19.43,-99.13;Bogotá,4.71,-74.07;Lima,-12.05,-77.04;Santiago,-33.45,-70.67;" +
  "Buenos Aires,-34.60,-58.38;São Paulo,-23.55,-46.63;Rio de Janeiro,-22.91,-43.17";

export const PLACES: readonly Place[] = CITIES.split(";").map((entry) => {
  const [name, lat, lon] = entry.split(",");
  return { name, lat: Number(lat), lon: Number(lon) };
});

const EARTH_KM = 6371.0088;
const COMPASS = ["N", "NE", "E", "SE", "S", "SW", "W", "NW"];

export function distanceKm(a: { lat: number; lon: number }, b: { lat: number; lon: number }): number {
  return geoDistance([a.lon, a.lat], [b.lon, b.lat]) * EARTH_KM;
}

/** Compass direction from `from` to `to` (eight points), on a local flat approximation. */
export function compass(from: { lat: number; lon: number }, to: { lat: number; lon: number }): string {
  const dx = (to.lon - from.lon) * Math.cos((from.lat * Math.PI) / 180);
  const dy = to.lat - from.lat;
  const deg = ((Math.atan2(dx, dy) * 180) / Math.PI + 360) % 360;
  return COMPASS[Math.round(deg / 45) % 8];
}

export function nearestPlace(point: { lat: number; lon: number }): { place: Place; km: number } {
  let best = PLACES[0];
  let bestKm = Infinity;
  for (const place of PLACES) {
    const km = distanceKm(point, place);
    if (km < bestKm) {
      best = place;
      bestKm = km;
    }
  }
  return { place: best, km: bestKm };
}

/** Where a point is, in words: "central Madrid", "3.2 km NE of central Madrid", "140 km SW of Lyon". */
export function placeLine(point: { lat: number; lon: number }, formatKm: (km: number) => string): string {
  const { place, km } = nearestPlace(point);
  if (km < 1) return `central ${place.name}`;
  const where = compass(place, point);
  return km < 30 ? `${formatKm(km)} ${where} of central ${place.name}` : `${formatKm(km)} ${where} of ${place.name}`;
}

/**
 * Range rings around the query point: every `stepKm` (the scale bar's round distance) out to the
 * farthest drone, at most `max` rings.
 */
export function ringDistances(stepKm: number, farthestKm: number, max = 4): number[] {
  if (!(stepKm > 0)) return [];
  const count = Math.max(1, Math.min(max, Math.ceil(farthestKm / stepKm)));
  return Array.from({ length: count }, (_, i) => (i + 1) * stepKm);
}
